"""``ImaginedEnv``: a moment-matching world model (e.g. a Gaussian process) as an environment.

Observations are Gaussian beliefs, ``("observation", "mean")`` and ``("observation", "var")``, so that
uncertainty-aware controllers (PILCO, Deisenroth & Rasmussen 2011) can roll out through
:meth:`~tdrl.envs.EnvBase.rollout`. The env never terminates and its reward is 0 (the controller's cost is
computed from the beliefs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule

from tdrl.data import Composite, Unbounded
from tdrl.envs.common import EnvBase
from tdrl.envs.model_based.common import ModelBasedEnvBase, expand_to_batch

__all__ = ["ImaginedEnv"]


class ImaginedEnv(ModelBasedEnvBase):
    """Imagination env over Gaussian beliefs; its action, reward and done specs are ``base_env``'s.

    Args:
        world_model_module: reads ``"action"`` and ``"observation"`` (the ``mean`` / ``var`` belief) and
            writes the next belief at ``next_observation_key``.
        base_env: the real env (only its specs are read; it needs an ``"observation"`` entry).
        batch_size: the env's batch size (default: ``base_env``'s, at least ``[1]``).
        next_observation_key: where the world model writes the next belief.
        **kwargs: passed to :class:`ModelBasedEnvBase`.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> from tdrl.envs import GymEnv
        >>> def model(obs, action):  # mean moves by the action, variance grows by 0.1
        ...     return obs["mean"][..., :1] * 0 + obs["mean"] + action.sum(-1, keepdim=True), obs["var"] + 0.1
        >>> wm = Mod(model, ["observation", "action"],
        ...     [("next", "observation", "mean"), ("next", "observation", "var")])
        >>> env = ImaginedEnv(wm, GymEnv("Pendulum-v1"))
        >>> data = env.rollout(3)
        >>> data["next", "observation", "var"][0, -1].diagonal()
        tensor([0.3000, 0.3000, 0.3000])
    """

    def __init__(
        self,
        world_model_module: TensorDictModule,
        base_env: EnvBase,
        batch_size: int | torch.Size | Sequence[int] | None = None,
        next_observation_key: str | tuple[str, ...] = ("next", "observation"),
        **kwargs: Any,
    ) -> None:
        self.__dict__["next_observation_key"] = next_observation_key
        if batch_size is not None:
            batch_size = torch.Size([batch_size] if isinstance(batch_size, int) else batch_size)
        else:
            batch_size = base_env.batch_size if len(base_env.batch_size) else torch.Size([1])
        super().__init__(world_model_module, device=base_env.device, batch_size=batch_size,
                         allow_done_after_reset=True, **kwargs)
        base_obs = base_env.observation_spec
        if "observation" not in base_obs.keys():
            raise KeyError(f"ImaginedEnv: base_env has no 'observation' entry (it has {list(base_obs.keys())})")
        self._base_observation_spec = expand_to_batch(base_obs, base_env.batch_size, self.batch_size)["observation"]
        dim, dtype = self._base_observation_spec.shape[-1], self._base_observation_spec.dtype
        self.observation_spec = Composite(
            observation=Composite(
                mean=Unbounded((dim,), device=self.device, dtype=dtype),
                var=Unbounded((dim, dim), device=self.device, dtype=dtype),
            ),
            device=self.device,
        ).expand(self.batch_size).clone()
        self.action_spec = expand_to_batch(base_env.action_spec, base_env.batch_size, self.batch_size)
        self.reward_spec = expand_to_batch(base_env.reward_spec, base_env.batch_size, self.batch_size)
        self.done_spec = expand_to_batch(base_env.done_spec, base_env.batch_size, self.batch_size)

    def any_done(self, tensordict: TensorDictBase) -> bool:
        """Always ``False``: rollouts last ``max_steps``."""
        return False

    def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``tensordict`` unchanged."""
        return tensordict

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = self.world_model(tensordict.clone(recurse=False))
        done = torch.zeros(*out.shape, 1, dtype=torch.bool, device=self.device)
        return TensorDict(
            {
                "observation": out.get(self.next_observation_key),
                "reward": torch.zeros(*out.shape, 1, device=self.device),
                "done": done,
                "terminated": done.clone(),
            },
            out.shape,
        )

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        if tensordict is None:
            tensordict = TensorDict({}, batch_size=self.batch_size, device=self.device)
        if (tensordict.get(("observation", "mean"), None) is not None
                and tensordict.get(("observation", "var"), None) is not None):
            return tensordict.copy()
        # A point observation (given, or drawn from the base spec) becomes a belief with zero variance.
        obs = tensordict.get("observation", None)
        if obs is None:
            obs = self._base_observation_spec.rand()
        if obs.ndim == 1:
            obs = obs.expand(*self.batch_size, -1)
        obs = obs.to(self.device)
        batch, dim = obs.shape[:-1], obs.shape[-1]
        flags = torch.zeros(*batch, 1, dtype=torch.bool, device=self.device)
        return TensorDict(
            {
                ("observation", "mean"): obs,
                ("observation", "var"): torch.zeros(*batch, dim, dim, dtype=obs.dtype, device=self.device),
                "done": flags,
                "terminated": flags.clone(),
            },
            batch_size=self.batch_size,
            device=self.device,
        )
