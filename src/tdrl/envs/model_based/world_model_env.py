"""``WorldModelEnv``: a :class:`~tdrl.modules.WorldModel` stepped in latent space as an environment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import NestedKey, TensorDict, TensorDictBase

from tdrl.envs.common import EnvBase
from tdrl.envs.model_based.common import ModelBasedEnvBase, expand_to_batch

__all__ = ["WorldModelEnv"]


class WorldModelEnv(ModelBasedEnvBase):
    """Steps a world model's :attr:`~tdrl.modules.WorldModel.step_module` (dynamics and heads, no encoder).

    The world model writes under ``"next"``; ``_step`` moves the observation, reward and done leaves the specs
    declare to the root (missing reward / done leaves are zeros). Action, reward and done specs are copied
    from ``base_env`` (never stepped). ``reset`` needs the initial latent in the given tensordict (usually
    ``world_model.encode(obs_td)``).

    Args:
        world_model: a :class:`~tdrl.modules.WorldModel` (anything with a ``step_module``).
        base_env: the reference env whose specs are copied.

    Keyword Args:
        observation_spec: the observation spec (default: ``base_env``'s).
        batch_size: the env's batch size (default: ``base_env``'s, at least ``[1]``).
        device: the env's device (default: ``base_env``'s).
        latent_key: where the latent state is stored.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> from tdrl.data import Composite, Unbounded
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import WorldModel
        >>> wm = WorldModel(
        ...     Mod(torch.nn.Linear(3, 4), ["observation"], ["latent"]),
        ...     Mod(lambda z, a: z + a, ["latent", "action"], [("next", "latent")]),
        ...     Mod(lambda z: z.sum(-1, keepdim=True), [("next", "latent")], [("next", "reward")]))
        >>> env = WorldModelEnv(wm, GymEnv("Pendulum-v1"), batch_size=[2],
        ...     observation_spec=Composite(latent=Unbounded((2, 4)), shape=(2,)))
        >>> from tensordict import TensorDict
        >>> start = wm.encode(TensorDict({"observation": torch.zeros(2, 3)}, [2]))
        >>> env.rollout(5, tensordict=start)["next", "reward"].shape
        torch.Size([2, 5, 1])
    """

    def __init__(
        self,
        world_model: Any,
        base_env: EnvBase,
        *,
        observation_spec: Any = None,
        batch_size: int | torch.Size | Sequence[int] | None = None,
        device: Any = None,
        latent_key: NestedKey = "latent",
    ) -> None:
        if batch_size is None:
            batch_size = base_env.batch_size if len(base_env.batch_size) else torch.Size([1])
        else:
            batch_size = torch.Size([batch_size] if isinstance(batch_size, int) else batch_size)
        super().__init__(world_model.step_module, device=base_env.device if device is None else device,
                         batch_size=batch_size, allow_done_after_reset=True)
        # The full model stays reachable (encode / decode) without being registered twice.
        self.__dict__["_world_model"] = world_model
        self.latent_key = latent_key
        self.action_spec = expand_to_batch(base_env.action_spec, base_env.batch_size, self.batch_size)
        self.reward_spec = expand_to_batch(base_env.reward_spec, base_env.batch_size, self.batch_size)
        self.done_spec = expand_to_batch(base_env.done_spec, base_env.batch_size, self.batch_size)
        if observation_spec is not None:
            self.observation_spec = observation_spec
        else:
            self.observation_spec = expand_to_batch(base_env.observation_spec, base_env.batch_size, self.batch_size)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = self.world_model(tensordict.copy())
        nxt = out.get("next", None)
        result = TensorDict(batch_size=out.batch_size, device=self.device)
        if nxt is None:
            return result
        for key in self.observation_spec.keys(True, True):
            value = nxt.get(key, None)
            if value is not None:
                result.set(key, value)
        for spec in (self.full_reward_spec, self.full_done_spec):
            for key in spec.keys(True, True):
                value = nxt.get(key, None)
                if value is None:
                    value = spec[key].zero()
                result.set(key, value)
        return result

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        if tensordict is None or self.latent_key not in tensordict.keys(include_nested=True):
            raise RuntimeError(
                f"WorldModelEnv._reset requires a tensordict carrying the initial latent under key "
                f"{self.latent_key!r}. Typical usage: encode a real observation with `world_model.encode(obs_td)` "
                "and pass the result as the `tensordict=` argument to `env.reset(...)` or `env.rollout(...)`."
            )
        out = tensordict.copy()
        zeros = self.full_done_spec.zero()
        for key in zeros.keys(True, True):
            out.set(key, zeros.get(key))
        return out
