"""Action reparametrisations applied on the way into the env: ``ActionScaling`` (an affine map from a
normalised box) and ``FlattenAction`` (a flat action unflattened to the env's shape)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey
from torch import nn

from tdrl.data.tensor_specs import Bounded, Composite, ContinuousBox, Unbounded
from tdrl.envs.transforms._base import Transform

__all__ = ["ActionScaling", "FlattenAction"]


def _as_list(keys: Any, default: list[NestedKey]) -> list[NestedKey]:
    if keys is None:
        return list(default)
    return [keys] if isinstance(keys, (str, tuple)) else list(keys)


def _finite_box(spec: Any) -> bool:
    if isinstance(spec, Unbounded) or not isinstance(getattr(spec, "space", None), ContinuousBox):
        return False
    low, high = spec.space.low, spec.space.high
    if low.dtype.is_floating_point:
        info = torch.finfo(low.dtype)
        if bool((low == info.min).any()) or bool((high == info.max).any()):
            return False
    return bool(torch.isfinite(low).all() and torch.isfinite(high).all())


class _ActionMap(Transform):
    """What both action maps share: they map the action the policy writes, never the env's outputs."""

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict  # env outputs carry no action

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict.get(in_key, None)
            if value is None:
                self._missing(in_key, tensordict)
                continue
            tensordict.set(out_key, self._apply_transform(value))
        return tensordict

    def check_keys(self, available: Sequence[NestedKey]) -> None:
        return None  # reads the action input, not the env's outputs


class ActionScaling(_ActionMap):
    r"""The policy acts in a normalised box; the env receives ``action * scale + loc``.

    Without ``loc``/``scale``, they come from the env's bounded action spec (``loc = (high + low) / 2``,
    ``scale = (high - low) / 2``) and the outer action spec becomes ``[-1, 1]`` (``[0, 1]`` when
    ``standard_normal=False``). On plain data (a dataset of env actions) ``forward`` normalises:
    :math:`(a - loc) / scale` (then :math:`(x + 1) / 2` for the unit box).

    Args:
        in_keys_inv: the env's action entry (one; default ``["action"]``); ``[]``: forward-only use.
        out_keys_inv: the normalised action entry the policy writes (default ``in_keys_inv``).
        in_keys: entries normalised by ``forward`` (default ``in_keys_inv``).
        out_keys: where ``forward`` writes (default ``in_keys``).

    Keyword Args:
        loc: explicit centre (given with ``scale``).
        scale: explicit half-range (no zero entries).
        standard_normal: ``[-1, 1]`` box (default True) or ``[0, 1]``.

    Examples:
        >>> import torch
        >>> from tdrl.envs import GymEnv, TransformedEnv
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"), ActionScaling())
        >>> env.action_spec.space.high, env.transform.scale
        (tensor([1.]), tensor([2.]))
        >>> env.transform.inv(env.reset().set("action", torch.tensor([0.5])))["action"]
        tensor([1.])
    """

    invertible = True

    def __init__(
        self,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        *,
        loc: torch.Tensor | float | None = None,
        scale: torch.Tensor | float | None = None,
        standard_normal: bool = True,
    ) -> None:
        in_keys_inv = _as_list(in_keys_inv, ["action"])
        if len(in_keys_inv) > 1:
            raise ValueError(
                "ActionScaling scales one action entry; compose one ActionScaling per action entry "
                f"(got in_keys_inv={in_keys_inv})"
            )
        in_keys = _as_list(in_keys, in_keys_inv or ["action"])
        super().__init__(
            in_keys=in_keys,
            out_keys=_as_list(out_keys, in_keys),
            in_keys_inv=in_keys_inv,
            out_keys_inv=_as_list(out_keys_inv, in_keys_inv),
        )
        if (loc is None) != (scale is None):
            raise ValueError("ActionScaling: loc and scale go together (both or neither)")
        if not in_keys_inv and loc is None:
            raise ValueError("ActionScaling: in_keys_inv=[] (forward only) needs an explicit loc and scale")
        self.standard_normal = bool(standard_normal)
        self._explicit = loc is not None
        if loc is not None:
            loc_t, scale_t = torch.as_tensor(loc), torch.as_tensor(scale)
            loc_t = loc_t if loc_t.dtype.is_floating_point else loc_t.to(torch.get_default_dtype())
            scale_t = scale_t if scale_t.dtype.is_floating_point else scale_t.to(torch.get_default_dtype())
            if bool((scale_t == 0).any()):
                raise ValueError(f"ActionScaling: scale has zero entries ({scale_t.tolist()})")
            self.register_buffer("loc", loc_t)
            self.register_buffer("scale", scale_t)
        else:
            self.register_buffer("loc", nn.UninitializedBuffer())
            self.register_buffer("scale", nn.UninitializedBuffer())

    @property
    def initialized(self) -> bool:
        return not isinstance(self.loc, nn.UninitializedBuffer)

    @classmethod
    def from_stats(
        cls,
        *,
        mean: torch.Tensor | None = None,
        std: torch.Tensor | None = None,
        low: torch.Tensor | None = None,
        high: torch.Tensor | None = None,
        eps: float = 1e-6,
        **kwargs: Any,
    ) -> ActionScaling:
        """From dataset statistics: ``(mean, std)`` or ``(low, high)`` (exactly one pair)."""
        if (mean is None) != (std is None) or (low is None) != (high is None):
            raise ValueError("ActionScaling.from_stats: mean/std and low/high each go in pairs")
        if (mean is None) == (low is None):
            raise ValueError("ActionScaling.from_stats: give exactly one of (mean, std) or (low, high)")
        dtype = torch.get_default_dtype()
        if mean is not None:
            loc, scale = torch.as_tensor(mean, dtype=dtype), torch.as_tensor(std, dtype=dtype)
        else:
            lo, hi = torch.as_tensor(low, dtype=dtype), torch.as_tensor(high, dtype=dtype)
            loc, scale = (lo + hi) / 2, (hi - lo) / 2
        if loc.shape != scale.shape:
            raise ValueError(
                f"ActionScaling.from_stats: shapes {tuple(loc.shape)} and {tuple(scale.shape)} differ"
            )
        return cls(loc=loc, scale=scale.clamp_min(eps), **kwargs)

    def _bounds(self, spec: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if not _finite_box(spec):
            raise RuntimeError(
                f"ActionScaling needs a finitely bounded continuous action spec, got {type(spec).__name__}"
            )
        low, high = spec.space.low, spec.space.high
        if bool((high <= low).any()):
            raise RuntimeError("ActionScaling needs high > low for every action entry")
        return low, high

    def _init_from(self, spec: Any) -> None:
        low, high = self._bounds(spec)
        dtype = low.dtype if low.dtype.is_floating_point else torch.get_default_dtype()
        loc, scale = ((high + low) / 2).to(dtype), ((high - low) / 2).to(dtype)
        if isinstance(self.loc, nn.UninitializedBuffer):
            self.loc.materialize(shape=loc.shape, dtype=loc.dtype)
            self.scale.materialize(shape=scale.shape, dtype=scale.dtype)
        self.loc.data.copy_(loc)
        self.scale.data.copy_(scale)

    def _ensure_initialized(self) -> None:
        if self.initialized:
            return
        parent = self.parent
        if parent is None:
            raise RuntimeError(
                "ActionScaling is not initialised: pass loc and scale, or attach it to an env with a bounded "
                "action spec"
            )
        key = unravel_key(self.in_keys_inv[0])
        if key not in parent.full_action_spec.keys(True, True):
            raise RuntimeError(
                f"ActionScaling: {key!r} is not in the env's action spec {list(parent.full_action_spec.keys(True, True))}"
            )
        self._init_from(parent.full_action_spec[key])

    def _loc_scale(self, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self._ensure_initialized()
        loc, scale = self.loc, self.scale
        if loc.numel() > 1 and (action.ndim == 0 or action.shape[-1] != loc.shape[-1]):
            raise ValueError(
                f"ActionScaling: action shape {tuple(action.shape)} does not match loc/scale of size {loc.shape[-1]}"
            )
        return loc.to(action.device), scale.to(action.device)

    def _apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        loc, scale = self._loc_scale(action)
        out = (action - loc) / scale
        return (out + 1) / 2 if not self.standard_normal else out

    def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        loc, scale = self._loc_scale(action)
        if not self.standard_normal:
            action = action * 2 - 1
        return action * scale + loc

    def normalize(self, action: torch.Tensor) -> torch.Tensor:
        """Env action -> normalised action."""
        return self._apply_transform(action)

    def denormalize(self, action: torch.Tensor) -> torch.Tensor:
        """Normalised action -> env action."""
        return self._inv_apply_transform(action)

    def _leaf(self, spec: Any) -> Any:
        dtype = spec.dtype if spec.dtype.is_floating_point else torch.get_default_dtype()
        if self._explicit:
            if not isinstance(getattr(spec, "space", None), ContinuousBox):
                raise RuntimeError(f"ActionScaling needs a continuous action spec, got {type(spec).__name__}")
            if not _finite_box(spec):
                return Unbounded(shape=spec.shape, device=spec.device, dtype=spec.dtype)
            loc, scale = self.loc.to(spec.space.low.device), self.scale.to(spec.space.low.device)
            low, high = (spec.space.low.to(dtype) - loc) / scale, (spec.space.high.to(dtype) - loc) / scale
            if not self.standard_normal:
                low, high = (low + 1) / 2, (high + 1) / 2
        else:
            if self.initialized:
                self._bounds(spec)
            else:
                self._init_from(spec)
            base = spec.space.low.to(dtype)
            low = torch.full_like(base, -1.0) if self.standard_normal else torch.zeros_like(base)
            high = torch.ones_like(base)
        return Bounded(low=low, high=high, shape=spec.shape, device=spec.device, dtype=spec.dtype)

    def transform_action_spec(self, action_spec: Any) -> Any:
        if not self.in_keys_inv:
            return action_spec
        if not isinstance(action_spec, Composite):
            return self._leaf(action_spec)
        action_spec = action_spec.clone()
        in_key, out_key = unravel_key(self.in_keys_inv[0]), unravel_key(self.out_keys_inv[0])
        if in_key in action_spec.keys(True, True):
            action_spec[out_key] = self._leaf(action_spec[in_key].clone())
            if in_key != out_key:
                del action_spec[in_key]
        return action_spec

    def __repr__(self) -> str:
        loc = self.loc if self.initialized else "<uninitialized>"
        scale = self.scale if self.initialized else "<uninitialized>"
        return (
            f"ActionScaling(loc={loc}, scale={scale}, standard_normal={self.standard_normal}, "
            f"in_keys_inv={self.in_keys_inv})"
        )


class FlattenAction(_ActionMap):
    """The policy writes a flat action; the env receives it unflattened over ``first_dim..last_dim``.

    The action spec seen outside is the base spec with those dims merged. The original shape comes from
    the env's action spec (or ``action_shape``). On plain data, ``forward`` flattens ``in_keys``.

    Args:
        first_dim: first dim merged (negative unless ``allow_positive_dim``); default -2.
        last_dim: last dim merged; default -1.
        in_keys_inv: the env's action entries (default ``["action"]``).
        out_keys_inv: the flat entries the policy writes (default ``in_keys_inv``).
        in_keys: entries flattened by ``forward`` (default ``in_keys_inv``).
        out_keys: where ``forward`` writes (default ``in_keys``).
        allow_positive_dim: allow dims counted from the front (after the env's batch dims).

    Keyword Args:
        action_shape: the shape of the merged span, when no env gives it.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = FlattenAction(action_shape=(2, 3))
        >>> t.inv(TensorDict(action=torch.arange(6.0)))["action"].shape
        torch.Size([2, 3])
        >>> t(TensorDict(action=torch.zeros(2, 3)))["action"].shape
        torch.Size([6])
    """

    invertible = True

    def __init__(
        self,
        first_dim: int = -2,
        last_dim: int = -1,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        allow_positive_dim: bool = False,
        *,
        action_shape: Sequence[int] | None = None,
    ) -> None:
        in_keys_inv = _as_list(in_keys_inv, ["action"])
        in_keys = _as_list(in_keys, in_keys_inv)
        super().__init__(
            in_keys=in_keys,
            out_keys=_as_list(out_keys, in_keys),
            in_keys_inv=in_keys_inv,
            out_keys_inv=_as_list(out_keys_inv, in_keys_inv),
        )
        for name, dim in (("first_dim", first_dim), ("last_dim", last_dim)):
            if dim >= 0 and not allow_positive_dim:
                raise ValueError(
                    f"FlattenAction: {name}={dim} must be negative (envs may have different batch sizes); "
                    "pass allow_positive_dim=True for a positive dim"
                )
        if first_dim > last_dim:
            raise ValueError(f"FlattenAction: first_dim ({first_dim}) must be <= last_dim ({last_dim})")
        self._first_dim, self._last_dim = first_dim, last_dim
        self.allow_positive_dim = bool(allow_positive_dim)
        self._shapes: dict[NestedKey, tuple[int, ...]] = {}
        if action_shape is not None:
            for key in self.in_keys_inv:
                self._shapes[key] = tuple(int(s) for s in action_shape)

    def _abs(self, dim: int) -> int:
        parent = self.parent
        return len(parent.batch_size) + dim if dim >= 0 and parent is not None else dim

    @property
    def first_dim(self) -> int:
        return self._abs(self._first_dim)

    @property
    def last_dim(self) -> int:
        return self._abs(self._last_dim)

    def _merged_dim(self) -> int:
        return self.first_dim if self._first_dim >= 0 else self.last_dim

    def _span(self, spec: Any) -> tuple[int, ...]:
        ndim = len(spec.shape)
        first = self._first_dim + (ndim if self._first_dim < 0 else 0)
        last = self._last_dim + (ndim if self._last_dim < 0 else 0)
        if first < 0 or last >= ndim or first > last:
            raise RuntimeError(
                f"FlattenAction(first_dim={self._first_dim}, last_dim={self._last_dim}) does not fit an action "
                f"of shape {tuple(spec.shape)}"
            )
        return tuple(int(s) for s in spec.shape[first : last + 1])

    def _ensure_shapes(self) -> None:
        if self._shapes or self.parent is None:
            return
        spec = self.parent.full_action_spec
        for key in self.in_keys_inv:
            if key in spec.keys(True, True):
                self._shapes[key] = self._span(spec[key])

    def _apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        return torch.flatten(action, self.first_dim, self.last_dim)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        self._ensure_shapes()
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(out_key, None)
            if value is None:
                continue  # a reset input carries no action
            shape = self._shapes.get(in_key)
            if shape is None:
                raise RuntimeError(
                    f"FlattenAction: no unflatten shape for {in_key!r}; pass action_shape or attach it to an env"
                )
            tensordict.set(in_key, torch.unflatten(value, self._merged_dim(), shape))
        return tensordict

    def _flat_leaf(self, spec: Any) -> Any:
        if isinstance(spec, Bounded) and not isinstance(spec, Unbounded):
            low = torch.flatten(spec.space.low, self.first_dim, self.last_dim)
            high = torch.flatten(spec.space.high, self.first_dim, self.last_dim)
            return Bounded(low=low, high=high, shape=low.shape, device=spec.device, dtype=spec.dtype)
        shape = list(spec.shape)
        first = self.first_dim + (len(shape) if self.first_dim < 0 else 0)
        last = self.last_dim + (len(shape) if self.last_dim < 0 else 0)
        spec = spec.clone()
        spec.shape = torch.Size((*shape[:first], math.prod(shape[first : last + 1]), *shape[last + 1 :]))
        return spec

    def transform_action_spec(self, action_spec: Any) -> Any:
        if not isinstance(action_spec, Composite):
            self._shapes[self.in_keys_inv[0]] = self._span(action_spec)
            return self._flat_leaf(action_spec)
        action_spec = action_spec.clone()
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            if in_key in action_spec.keys(True, True):
                leaf = action_spec[in_key]
                self._shapes[in_key] = self._span(leaf)
                action_spec[out_key] = self._flat_leaf(leaf)
                if in_key != out_key:
                    del action_spec[in_key]
        return action_spec

    def __repr__(self) -> str:
        return f"FlattenAction(first_dim={self.first_dim}, last_dim={self.last_dim}, in_keys_inv={self.in_keys_inv})"
