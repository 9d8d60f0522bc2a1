"""Reward transforms: ``RewardScaling``, ``RewardClipping`` and ``RewardSum`` (episode returns)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Bounded, Composite, Unbounded
from tdrl.envs.transforms._base import Transform
from tdrl.envs.transforms._utils import prefixed, reset_mask

__all__ = ["RewardClipping", "RewardScaling", "RewardSum"]


class _RewardTransform(Transform):
    """A transform of reward entries: nothing to do on reset outputs (they carry no reward)."""

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def _map_bounds(self, low: torch.Tensor, high: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return low, high

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            leaf = reward_spec[in_key] if in_key in reward_spec.keys(True, True) else None
            if leaf is None:
                continue
            if isinstance(leaf, Bounded):
                low, high = self._map_bounds(leaf.low, leaf.high)
                new = Bounded(
                    low=torch.minimum(low, high),
                    high=torch.maximum(low, high),
                    shape=leaf.shape,
                    dtype=leaf.dtype,
                    device=leaf.device,
                )
            else:
                new = Unbounded(shape=leaf.shape, dtype=leaf.dtype, device=leaf.device)
            reward_spec[out_key] = new
        return reward_spec


class RewardScaling(_RewardTransform):
    """Affine reward transform: ``r * scale + loc``, or ``(r - loc) / scale`` when ``standard_normal``.

    Args:
        loc: the shift.
        scale: the scale.
        in_keys: reward entries (default ``["reward"]``).
        out_keys: output entries (default ``in_keys``).
        standard_normal: use ``(r - loc) / scale``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = RewardScaling(loc=1.0, scale=2.0)
        >>> t(TensorDict({"reward": torch.tensor([1.0, 2.0])}, [2]))["reward"]
        tensor([3., 5.])
    """

    def __init__(
        self,
        loc: float | torch.Tensor,
        scale: float | torch.Tensor,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        standard_normal: bool = False,
    ) -> None:
        super().__init__(in_keys=["reward"] if in_keys is None else in_keys, out_keys=out_keys)
        self.standard_normal = standard_normal
        self.register_buffer("loc", torch.as_tensor(loc, dtype=torch.get_default_dtype()))
        scale = torch.as_tensor(scale, dtype=torch.get_default_dtype())
        self.register_buffer("scale", scale.clamp_min(1e-6) if standard_normal else scale)

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        if self.standard_normal:
            return ((reward - self.loc) / self.scale).to(reward.dtype)
        return (reward * self.scale + self.loc).to(reward.dtype)

    def _map_bounds(self, low: torch.Tensor, high: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self._apply_transform(low), self._apply_transform(high)

    def __repr__(self) -> str:
        return (
            f"RewardScaling(loc={self.loc.item() if self.loc.numel() == 1 else '...'}, keys={self.in_keys})"
        )


class RewardClipping(_RewardTransform):
    """Clamps rewards to ``[clamp_min, clamp_max]`` (either bound may be None).

    Args:
        clamp_min: the lower bound.
        clamp_max: the upper bound.
        in_keys: reward entries (default ``["reward"]``).
        out_keys: output entries (default ``in_keys``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = RewardClipping(-1.0, 1.0)
        >>> t(TensorDict({"reward": torch.tensor([-3.0, 0.5, 3.0])}, [3]))["reward"]
        tensor([-1.0000,  0.5000,  1.0000])
    """

    def __init__(
        self,
        clamp_min: float | None = None,
        clamp_max: float | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=["reward"] if in_keys is None else in_keys, out_keys=out_keys)
        if clamp_min is not None and clamp_max is not None and clamp_min > clamp_max:
            raise ValueError(f"RewardClipping: clamp_min={clamp_min} is larger than clamp_max={clamp_max}")
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        return reward.clamp(self.clamp_min, self.clamp_max)

    def _map_bounds(self, low: torch.Tensor, high: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return low.clamp(self.clamp_min, self.clamp_max), high.clamp(self.clamp_min, self.clamp_max)

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        if self.clamp_min is None or self.clamp_max is None:
            return super().transform_reward_spec(reward_spec)
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in reward_spec.keys(True, True):
                leaf = reward_spec[in_key]
                reward_spec[out_key] = Bounded(
                    low=self.clamp_min,
                    high=self.clamp_max,
                    shape=leaf.shape,
                    dtype=leaf.dtype,
                    device=leaf.device,
                )
        return reward_spec

    def __repr__(self) -> str:
        return f"RewardClipping(clamp_min={self.clamp_min}, clamp_max={self.clamp_max}, keys={self.in_keys})"


def _episode_key(reward_key: NestedKey) -> NestedKey:
    path = (reward_key,) if isinstance(reward_key, str) else tuple(reward_key)
    return prefixed(path[:-1], "episode_reward" if path[-1] == "reward" else f"episode_{path[-1]}")


class RewardSum(Transform):
    """Tracks the cumulative reward of the current episode (reset to 0 by resets).

    Args:
        in_keys: reward entries (default: the env's reward keys, ``["reward"]`` when detached).
        out_keys: the sums (default ``"episode_reward"`` next to each reward).
        reset_keys: the ``_reset`` entries that zero each sum (default: next to each reward).

    Keyword Args:
        reward_spec: declare the sums in the reward spec instead of the observation spec.

    Examples:
        >>> import torch
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(seed=0), RewardSum())
        >>> data = env.rollout(3)
        >>> torch.allclose(data["next", "episode_reward"], data["next", "reward"].cumsum(0))
        True
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        reset_keys: Sequence[NestedKey] | None = None,
        *,
        reward_spec: bool = False,
    ) -> None:
        self._user_in_keys = in_keys is not None
        super().__init__(in_keys=["reward"] if in_keys is None else in_keys, out_keys=out_keys)
        self._user_out_keys = out_keys is not None
        self._reset_keys = None if reset_keys is None else list(reset_keys)
        self.reward_spec = reward_spec
        self._leaf_info: dict[NestedKey, tuple[torch.Size, torch.dtype, Any]] = {}

    @property
    def out_keys(self) -> list[NestedKey]:
        if self._out_keys is not None:
            return self._out_keys
        return [_episode_key(k) for k in self.in_keys]

    @out_keys.setter
    def out_keys(self, value: Sequence[NestedKey] | None) -> None:
        Transform.out_keys.fset(self, value)

    @property
    def reset_keys(self) -> list[NestedKey]:
        if self._reset_keys is not None:
            return self._reset_keys
        out = []
        for k in self.in_keys:
            path = (k,) if isinstance(k, str) else tuple(k)
            out.append(prefixed(path[:-1], "_reset"))
        return out

    def _zeros(self, out_key: NestedKey, like: TensorDictBase) -> torch.Tensor:
        info = self._leaf_info.get(out_key)
        if info is None:
            return torch.zeros((*like.batch_size, 1), device=like.device)
        shape, dtype, device = info
        return torch.zeros(shape, dtype=dtype, device=device)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for out_key, reset_key in zip(self.out_keys, self.reset_keys):
            prev = None if tensordict is None else tensordict.get(out_key, None)
            zeros = self._zeros(out_key, tensordict_reset)
            mask = None if prev is None else reset_mask(tensordict, reset_key, prev.shape, prev.device)
            tensordict_reset.set(out_key, zeros if mask is None else prev.masked_fill(mask, 0))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            reward = next_tensordict.get(in_key, None)
            if reward is None:
                self._missing(in_key, next_tensordict)
                continue
            prev = tensordict.get(out_key, None)
            next_tensordict.set(out_key, reward.clone() if prev is None else prev + reward)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline use: cumulative sums of ``in_keys`` along the dim named ``"time"``."""
        names = tensordict.names
        if "time" not in names:
            raise ValueError(
                "RewardSum on data outside an env needs one batch dim named 'time' "
                f"(got names={names}); use td.refine_names(..., 'time')"
            )
        dim = names.index("time")
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            reward = tensordict.get(in_key, None)
            if reward is None:
                self._missing(in_key, tensordict)
                continue
            tensordict.set(out_key, reward.cumsum(dim))
        return tensordict

    def transform_output_spec(self, output_spec: Any) -> Any:
        output_spec = output_spec.clone()
        reward_spec = output_spec["full_reward_spec"]
        if not self._user_in_keys:
            self.in_keys = list(reward_spec.keys(True, True))
        target = "full_reward_spec" if self.reward_spec else "full_observation_spec"
        dest = output_spec[target]
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in reward_spec.keys(True, True):
                raise KeyError(
                    f"RewardSum: reward key {in_key!r} not in the env's reward spec "
                    f"(available: {list(reward_spec.keys(True, True))})"
                )
            leaf = reward_spec[in_key]
            dest[out_key] = Unbounded(shape=leaf.shape, dtype=leaf.dtype, device=leaf.device)
            self._leaf_info[out_key] = (leaf.shape, leaf.dtype, leaf.device)
        output_spec[target] = dest
        return output_spec

    def transform_input_spec(self, input_spec: Any) -> Any:
        # The running sums are state as well (TorchRL lists them in full_state_spec): they are read back
        # at the next step. ``transform_output_spec`` runs first and records each sum's shape and dtype.
        input_spec = super().transform_input_spec(input_spec)
        if "full_state_spec" in input_spec.keys():
            state = input_spec["full_state_spec"]
        else:
            state = Composite(shape=input_spec.shape, device=input_spec.device)
        for out_key in self.out_keys:
            info = self._leaf_info.get(out_key)
            if info is not None:
                shape, dtype, device = info
                state[out_key] = Unbounded(shape=shape, dtype=dtype, device=device)
        input_spec["full_state_spec"] = state
        return input_spec

    def _required_keys(self) -> list[NestedKey]:
        return []

    def _added_keys(self) -> list[NestedKey]:
        return list(self.out_keys)

    def __repr__(self) -> str:
        return f"RewardSum(in_keys={self.in_keys}, out_keys={self.out_keys})"
