"""``UnaryTransform``: a user function applied to entries (and its inverse to inputs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Unbounded
from tdrl.envs.transforms._base import Transform
from tdrl.envs.utils import make_composite_from_td

__all__ = ["UnaryTransform"]


class UnaryTransform(Transform):
    """Applies ``fn`` to each ``in_keys`` entry, writing the result to the matching ``out_keys`` entry.

    The specs of the outputs are found by calling ``fn`` on a zero sample of the input specs (an
    ``Unbounded`` of the result's shape and dtype, or a ``Composite`` when ``fn`` returns a tensordict).
    ``inv_fn`` (optional) maps each ``out_keys_inv`` input to ``in_keys_inv`` before the base env steps; the
    outer spec of such an input is the base one.

    Args:
        in_keys: entries read.
        out_keys: entries written (same length as ``in_keys``).
        in_keys_inv: inputs written by ``inv_fn`` (the base env's names).
        out_keys_inv: inputs read by ``inv_fn`` (default ``in_keys_inv``).
        fn: the forward map.
        inv_fn: the inverse map (default: none).
        use_raw_nontensor: accepted for TorchRL compatibility (non-tensor entries are passed as they are).

    Examples:
        >>> from tdrl.envs import GymEnv, TransformedEnv
        >>> t = UnaryTransform(in_keys=["observation"], out_keys=["obs_sq"], fn=lambda x: x.pow(2).sum(-1, keepdim=True))
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"), t)
        >>> env.observation_spec["obs_sq"].shape
        torch.Size([1])
        >>> env.rollout(2)["next", "obs_sq"].shape
        torch.Size([2, 1])
    """

    def __init__(self, in_keys: Sequence[NestedKey], out_keys: Sequence[NestedKey],
                 in_keys_inv: Sequence[NestedKey] | None = None, out_keys_inv: Sequence[NestedKey] | None = None,
                 *, fn: Callable[[Any], Any], inv_fn: Callable[[Any], Any] | None = None,
                 use_raw_nontensor: bool = False) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        if len(self.in_keys) != len(self.out_keys):
            raise ValueError(f"UnaryTransform: {len(self.in_keys)} in_keys but {len(self.out_keys)} out_keys")
        if self.in_keys_inv and inv_fn is None:
            raise ValueError("UnaryTransform: in_keys_inv given without an inv_fn")
        if not callable(fn):
            raise TypeError(f"UnaryTransform: fn must be callable, got {type(fn).__name__}")
        self._fn = fn
        self._inv_fn = inv_fn
        self.use_raw_nontensor = use_raw_nontensor
        self.invertible = inv_fn is not None

    def _apply_transform(self, value: Any) -> Any:
        return self._fn(value)

    def _inv_apply_transform(self, value: Any) -> Any:
        return value if self._inv_fn is None else self._inv_fn(value)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict_reset.get(in_key, None)
            if value is not None:  # reward-like entries are absent from reset outputs
                tensordict_reset.set(out_key, self._fn(value))
        return tensordict_reset

    def _map_specs(self, spec: Any) -> Any:
        present = set(spec.keys(True, True))
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in present:
                continue
            leaf = spec[in_key]
            sample = self._fn(leaf.zero())
            if isinstance(sample, TensorDictBase):
                spec[out_key] = make_composite_from_td(sample)
            elif isinstance(sample, torch.Tensor):
                spec[out_key] = Unbounded(shape=sample.shape, dtype=sample.dtype, device=sample.device)
            else:
                raise TypeError(f"UnaryTransform: fn returned a {type(sample).__name__} for {in_key!r}; "
                                "expected a tensor or a tensordict")
        return spec

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return self._map_specs(observation_spec)

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return self._map_specs(reward_spec)

    def transform_action_spec(self, action_spec: Any) -> Any:
        present = set(action_spec.keys(True, True))
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            if in_key in present and in_key != out_key:
                action_spec[out_key] = action_spec[in_key].clone()
                del action_spec[in_key]
        return action_spec

    def __repr__(self) -> str:
        return f"UnaryTransform(in_keys={self.in_keys}, out_keys={self.out_keys}, fn={self._fn!r})"
