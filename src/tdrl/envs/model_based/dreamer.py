"""``DreamerEnv``: Dreamer's imagination environment in latent space, and the ``DreamerDecoder`` transform.

Hafner et al., "Dream to Control: Learning Behaviors by Latent Imagination", https://arxiv.org/abs/1912.01603.
The state is the RSSM's stochastic ``"state"`` and deterministic ``"belief"``; the world model is the RSSM
prior followed by a reward head. Imagination runs for a fixed horizon and never terminates.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from tdrl.data import Composite
from tdrl.envs.common import EnvBase
from tdrl.envs.model_based.common import ModelBasedEnvBase
from tdrl.envs.transforms import Transform

__all__ = ["DreamerDecoder", "DreamerEnv"]


class DreamerEnv(ModelBasedEnvBase):
    """Dreamer's latent imagination env: ``step`` runs the RSSM prior and the reward model.

    ``done`` is never set, so :meth:`any_done` is ``False`` and :meth:`maybe_reset` does nothing (no
    device synchronisation on a done check). Specs usually come from :meth:`set_specs_from_env` on the real
    env after a ``"state"`` and a ``"belief"`` observation were added to it.

    Args:
        world_model: the imagination step, ``("state", "belief", "action") -> ("state", "belief", "reward")``.
        prior_shape: shape of the stochastic state.
        belief_shape: shape of the deterministic belief.
        obs_decoder: decoder used by :meth:`decode_obs` and :class:`DreamerDecoder`.
        device: device of the env.
        batch_size: batch size of the env.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> from tdrl.data import Composite, Unbounded
        >>> from tdrl.modules import WorldModelWrapper
        >>> step = WorldModelWrapper(
        ...     Mod(lambda s, b, a: (s + a, b), ["state", "belief", "action"], ["state", "belief"]),
        ...     Mod(lambda s: s.sum(-1, keepdim=True), ["state"], ["reward"]),
        ... )
        >>> env = DreamerEnv(step, prior_shape=(2,), belief_shape=(3,))
        >>> env.observation_spec = Composite(state=Unbounded((2,)), belief=Unbounded((3,)))
        >>> env.state_spec = Composite(state=Unbounded((2,)), belief=Unbounded((3,)))
        >>> env.action_spec = Unbounded((2,))
        >>> env.reward_spec = Unbounded((1,))
        >>> start = TensorDict({"state": torch.zeros(4, 2), "belief": torch.zeros(4, 3)}, [4])
        >>> fake = env.rollout(5, lambda td: td.set("action", torch.ones(4, 2)), auto_reset=False, tensordict=start)
        >>> fake["next", "reward"][0, :, 0]
        tensor([ 2.,  4.,  6.,  8., 10.])
    """

    def __init__(
        self,
        world_model: nn.Module,
        prior_shape: tuple[int, ...],
        belief_shape: tuple[int, ...],
        obs_decoder: nn.Module | None = None,
        device: Any = "cpu",
        batch_size: torch.Size | None = None,
    ) -> None:
        # Imagination never terminates: a reset cannot be "done" either.
        super().__init__(world_model, device=device, batch_size=batch_size, allow_done_after_reset=True)
        self.obs_decoder = obs_decoder
        self.prior_shape = prior_shape
        self.belief_shape = belief_shape

    def any_done(self, tensordict: TensorDictBase) -> bool:
        """Always ``False``: imagined rollouts run for their full horizon."""
        return False

    def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``tensordict`` unchanged (no partial resets in imagination)."""
        return tensordict

    def set_specs_from_env(self, env: EnvBase) -> None:
        """Copies ``env``'s specs; the state spec becomes its ``"state"`` and ``"belief"`` observations."""
        super().set_specs_from_env(env)
        obs = self.observation_spec
        for key in ("state", "belief"):
            if key not in obs.keys():
                raise KeyError(
                    f"DreamerEnv.set_specs_from_env: the env's observation spec has no {key!r} entry "
                    f"(it holds {list(obs.keys())}); add the RSSM's state and belief to it first"
                )
        if self.device is not None:
            self.action_spec = self.action_spec.to(self.device)
        self.state_spec = Composite(state=obs["state"], belief=obs["belief"], shape=env.batch_size)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        if tensordict is not None:
            return tensordict.clone()
        # No starting latent given: random ones, as TorchRL does (imagination normally starts from posteriors).
        td = self.state_spec.rand()
        td.set("action", self.action_spec.rand())
        td.set(("next", "reward"), self.reward_spec.rand())
        td.update(self.observation_spec.rand())
        if self.device is not None:
            td = td.to(self.device)
        return td

    def decode_obs(self, tensordict: TensorDictBase, compute_latents: bool = False) -> TensorDictBase:
        """Decodes observations with ``obs_decoder`` (after running the world model if ``compute_latents``)."""
        if self.obs_decoder is None:
            raise ValueError("No observation decoder provided")
        if compute_latents:
            tensordict = self.world_model(tensordict)
        return self.obs_decoder(tensordict)


class DreamerDecoder(Transform):
    """Writes the base :class:`DreamerEnv`'s decoded observations at each step and reset (for recording).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> from tdrl.data import Composite, Unbounded
        >>> from tdrl.modules import WorldModelWrapper
        >>> step = WorldModelWrapper(
        ...     Mod(lambda s, b, a: (s + a, b), ["state", "belief", "action"], ["state", "belief"]),
        ...     Mod(lambda s: s.sum(-1, keepdim=True), ["state"], ["reward"]),
        ... )
        >>> decoder = Mod(lambda s, b: torch.cat([s, b], -1), ["state", "belief"], ["reco_pixels"])
        >>> env = DreamerEnv(step, prior_shape=(2,), belief_shape=(3,), obs_decoder=decoder)
        >>> env.observation_spec = Composite(state=Unbounded((2,)), belief=Unbounded((3,)))
        >>> env.state_spec = Composite(state=Unbounded((2,)), belief=Unbounded((3,)))
        >>> env.action_spec = Unbounded((2,))
        >>> env.reward_spec = Unbounded((1,))
        >>> env = env.append_transform(DreamerDecoder())
        >>> env.rollout(3)["next", "reco_pixels"].shape
        torch.Size([3, 5])
    """

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self.parent.base_env.obs_decoder(next_tensordict)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return observation_spec
