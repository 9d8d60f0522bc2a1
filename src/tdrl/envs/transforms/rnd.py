"""Random network distillation (RND): an intrinsic reward from the error of predicting a frozen random net.

Burda et al., "Exploration by Random Network Distillation", https://arxiv.org/abs/1810.12894. States the
predictor has seen often are predicted well (low bonus); novel states are not (high bonus). The predictor
is trained by :class:`~tdrl.objectives.rnd.RNDLoss`; this transform only scores steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey
from torch import nn

from tdrl.data.tensor_specs import Unbounded
from tdrl.envs.transforms._base import Transform

__all__ = ["RNDTransform", "RunningMeanStd"]


class RunningMeanStd(nn.Module):
    """Running mean and (population) variance merged batch by batch (Chan et al.'s parallel update).

    The statistics are buffers, so they are saved in ``state_dict()`` and follow ``.to()``.

    Args:
        shape: feature shape tracked (``()`` for scalars).
        epsilon: initial pseudo-count, which keeps the first update well defined.

    Examples:
        >>> rms = RunningMeanStd(shape=(2,), epsilon=0.0)
        >>> rms.update(torch.tensor([[1.0, 2.0], [3.0, 6.0]]))
        >>> rms.mean, rms.var, rms.normalize(torch.tensor([[2.0, 4.0]]))
        (tensor([2., 4.]), tensor([1., 4.]), tensor([[0., 0.]]))
    """

    def __init__(self, shape: Sequence[int] = (), epsilon: float = 1e-4) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(tuple(shape), dtype=torch.float32))
        self.register_buffer("var", torch.ones(tuple(shape), dtype=torch.float32))
        self.register_buffer("count", torch.tensor(epsilon, dtype=torch.float32))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Merges a batch: leading dimensions are samples, trailing ones must match ``mean.shape``."""
        feat = self.mean.shape
        if tuple(x.shape[x.ndim - len(feat):]) != tuple(feat):
            raise ValueError(f"RunningMeanStd: samples of shape {tuple(x.shape)} do not end with {tuple(feat)}")
        x = x.float().reshape(-1, *feat)
        n = x.shape[0]
        batch_mean = x.mean(0)
        batch_var = x.var(0, unbiased=False) if n > 1 else torch.zeros_like(batch_mean)
        delta = batch_mean - self.mean
        total = self.count + n
        m2 = self.var * self.count + batch_var * n + delta.square() * self.count * n / total
        self.mean.add_(delta * n / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """``(x - mean) / std`` (``std`` floored at 1e-4)."""
        return (x.float() - self.mean) / self.var.clamp_min(1e-8).sqrt()


class RNDTransform(Transform):
    """Writes the RND intrinsic reward ``mean((predictor(o') - target(o'))^2)`` of each step's next observation.

    Observations are normalised by running statistics and clipped to ``[-obs_clip, obs_clip]`` first; the
    bonus is divided by its running standard deviation and clipped to ``[-reward_clip, reward_clip]``. Both
    statistics are created on the first step (their shapes come from the data) and updated only in training
    mode (``transform.train()``, the default). The target network is frozen on construction.

    Args:
        target_network: the fixed random network.
        predictor_network: the network trained (by ``RNDLoss``) to match it.
        in_keys: the observation read (default ``["observation"]``).
        out_keys: where the bonus is written (default ``["intrinsic_reward"]``), shaped like the reward.
        normalize_obs: normalise observations with running statistics (default ``True``).
        normalize_reward: divide the bonus by its running standard deviation (default ``True``).
        obs_clip: clip of the normalised observations (default 5).
        reward_clip: clip of the normalised bonus (default 5).

    Examples:
        >>> from tensordict import TensorDict
        >>> t = RNDTransform(torch.nn.Linear(3, 4), torch.nn.Linear(3, 4))
        >>> nxt = t._step(TensorDict({}, [5]), TensorDict({"observation": torch.randn(5, 3)}, [5]))
        >>> nxt["intrinsic_reward"].shape
        torch.Size([5, 1])
    """

    def __init__(
        self,
        target_network: nn.Module,
        predictor_network: nn.Module,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        normalize_obs: bool = True,
        normalize_reward: bool = True,
        obs_clip: float = 5.0,
        reward_clip: float = 5.0,
    ) -> None:
        super().__init__(in_keys=in_keys or ["observation"], out_keys=out_keys or ["intrinsic_reward"])
        self.target_network = target_network
        self.predictor_network = predictor_network
        self.target_network.requires_grad_(False)
        self.normalize_obs, self.normalize_reward = normalize_obs, normalize_reward
        self.obs_clip, self.reward_clip = obs_clip, reward_clip
        self._obs_rms: RunningMeanStd | None = None
        self._reward_rms: RunningMeanStd | None = None

    @property
    def obs_rms(self) -> RunningMeanStd | None:
        """Running observation statistics (``None`` before the first step or when disabled)."""
        return self._obs_rms

    @property
    def reward_rms(self) -> RunningMeanStd | None:
        """Running bonus statistics (``None`` before the first step or when disabled)."""
        return self._reward_rms

    def _ensure_stats(self, feat_shape: Sequence[int], device: torch.device) -> None:
        if self.normalize_obs and self._obs_rms is None:
            self._obs_rms = RunningMeanStd(feat_shape).to(device)
        if self.normalize_reward and self._reward_rms is None:
            self._reward_rms = RunningMeanStd(()).to(device)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args: Any) -> None:
        # Statistics saved after the first step exist before this transform's first step: create them.
        for name, enabled in (("_obs_rms", self.normalize_obs), ("_reward_rms", self.normalize_reward)):
            mean = state_dict.get(f"{prefix}{name}.mean")
            if enabled and getattr(self, name) is None and mean is not None:
                setattr(self, name, RunningMeanStd(tuple(mean.shape)).to(mean.device))
        super()._load_from_state_dict(state_dict, prefix, *args)

    def intrinsic_reward(self, obs: torch.Tensor) -> torch.Tensor:
        """The bonus of observations ``obs`` (``[..., 1]``), updating the statistics in training mode."""
        obs = obs.float()
        self._ensure_stats(obs.shape[-1:], obs.device)
        if self._obs_rms is not None:
            if self.training:
                self._obs_rms.update(obs)
            obs = self._obs_rms.normalize(obs).clamp(-self.obs_clip, self.obs_clip)
        with torch.no_grad():
            bonus = (self.predictor_network(obs) - self.target_network(obs)).square().mean(-1, keepdim=True)
        if self._reward_rms is not None:
            if self.training:
                self._reward_rms.update(bonus)
            bonus = (bonus / self._reward_rms.var.clamp_min(1e-8).sqrt()).clamp(-self.reward_clip, self.reward_clip)
        return bonus

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        obs = next_tensordict.get(self.in_keys[0], None)
        if obs is None:
            self._missing(self.in_keys[0], next_tensordict)
            return next_tensordict
        return next_tensordict.set(self.out_keys[0], self.intrinsic_reward(obs))

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset  # reset outputs carry no reward

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        shape, device = (*reward_spec.shape, 1), reward_spec.device
        parent = self.parent
        for key in parent.reward_keys if parent is not None else ():
            if key in reward_spec.keys(True, True):
                shape, device = reward_spec[key].shape, reward_spec[key].device
                break
        for key in self.out_keys:
            reward_spec[key] = Unbounded(shape=shape, device=device, dtype=torch.float32)
        return reward_spec
