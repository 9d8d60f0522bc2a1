"""``Bounded`` specs: values within element-wise ``[low, high]`` (``BoundedContinuous`` / ``BoundedDiscrete``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tdrl.data.tensor_specs._base import (
    DEVICE_TYPING,
    SHAPE_TYPING,
    TensorSpec,
    _as_device,
    _as_dtype,
    _as_size,
)
from tdrl.data.tensor_specs.spaces import ContinuousBox


def _bound_tensor(value: Any, name: str, dtype: torch.dtype, device: torch.device | None) -> torch.Tensor:
    if value is None:
        raise TypeError(f"Bounded requires both `low` and `high`; `{name}` is missing.")
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(np.array(value))
    return torch.as_tensor(value, device=device).to(dtype)


def _infer_dtype(low: Any, high: Any, dtype: torch.dtype | str | None) -> torch.dtype:
    if dtype is not None:
        return _as_dtype(dtype, torch.get_default_dtype())
    for bound in (low, high):
        if isinstance(bound, torch.Tensor) and bound.dtype.is_floating_point:
            return bound.dtype
    return torch.get_default_dtype()


class Bounded(TensorSpec):
    """A tensor whose values lie element-wise in ``[low, high]``.

    ``low``/``high`` may be python scalars, numpy arrays or tensors broadcastable to ``shape``; when
    ``shape`` is omitted it is taken from them. ``Bounded(...)`` returns a :class:`BoundedContinuous`
    for floating dtypes (uniform ``rand``) and a :class:`BoundedDiscrete` for integer dtypes (uniform
    integers in ``[low, high]``, both ends included).

    Args:
        low: lower bound(s).
        high: upper bound(s).
        shape: full shape, leading batch dims included.
        device: device of the tensor. Defaults to the bounds' device, else CPU.
        dtype: dtype of the tensor. Defaults to the bounds' float dtype or the default dtype.
        domain: ignored (kept for TorchRL compatibility); the domain follows ``dtype``.

    Examples:
        >>> import torch
        >>> spec = Bounded(-1.0, 1.0, shape=(3,))
        >>> spec.project(torch.tensor([-3.0, 0.5, 2.0]))
        tensor([-1.0000,  0.5000,  1.0000])
        >>> Bounded(0, 3, shape=(2,), dtype=torch.int64).domain
        'discrete'
    """

    _per_element = ("low", "high")

    def __new__(cls, *args: Any, **kwargs: Any) -> Bounded:
        if cls is Bounded:
            low = kwargs.get("low", args[0] if args else None)
            high = kwargs.get("high", args[1] if len(args) > 1 else None)
            dtype = _infer_dtype(low, high, kwargs.get("dtype", args[4] if len(args) > 4 else None))
            cls = BoundedContinuous if dtype.is_floating_point else BoundedDiscrete
        return super().__new__(cls)

    def __init__(
        self,
        low: float | torch.Tensor | np.ndarray | None = None,
        high: float | torch.Tensor | np.ndarray | None = None,
        shape: SHAPE_TYPING = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | str | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("domain", None)
        low = kwargs.pop("minimum", low)
        high = kwargs.pop("maximum", high)
        if kwargs:
            raise TypeError(f"Bounded got unexpected keyword arguments {sorted(kwargs)}.")
        dtype = _infer_dtype(low, high, dtype)
        if device is None:
            device = next((b.device for b in (low, high) if isinstance(b, torch.Tensor)), torch.device("cpu"))
        device = _as_device(device)
        low_t = _bound_tensor(low, "low", dtype, device)
        high_t = _bound_tensor(high, "high", dtype, device)
        if shape is None:
            shape = torch.broadcast_shapes(low_t.shape, high_t.shape)
        shape = _as_size(shape)
        try:
            # Contiguous copies: users may edit `spec.low` in place (an expanded view would refuse).
            low_t, high_t = low_t.expand(shape).clone(), high_t.expand(shape).clone()
        except RuntimeError as err:
            raise ValueError(
                f"Bounded: low (shape {tuple(low_t.shape)}) and high (shape {tuple(high_t.shape)}) must be "
                f"broadcastable to the spec shape {tuple(shape)}."
            ) from err
        if low_t.device.type != "meta" and bool((low_t > high_t).any()):
            raise ValueError(f"Bounded: every `low` must be <= `high`, got low={low_t} and high={high_t}.")
        domain = "continuous" if dtype.is_floating_point else "discrete"
        super().__init__(shape, ContinuousBox(low_t, high_t), device, dtype, domain)
        self._refresh()

    def _refresh(self) -> None:
        """Recomputes the sampling constants after the bounds changed."""
        low, high = self.space.low, self.space.high
        self._stamp = (low, low._version, high, high._version)
        if self.domain == "continuous":
            meta = low.device.type == "meta"
            self._finite = meta or bool(torch.isfinite(low).all() and torch.isfinite(high).all())
            self._scale = high - low
        else:
            self._finite = True
            self._scale = high.double() - low.double() + 1

    def _stale(self, low: torch.Tensor, high: torch.Tensor) -> bool:
        stamp = self._stamp
        return (
            low is not stamp[0]
            or high is not stamp[2]
            or low._version != stamp[1]
            or high._version != stamp[3]
        )

    @property
    def low(self) -> torch.Tensor:
        """Lower bounds, a tensor of the spec's shape."""
        return self.space.low

    @low.setter
    def low(self, value: Any) -> None:
        self._set_bound("low", value)

    @property
    def high(self) -> torch.Tensor:
        """Upper bounds, a tensor of the spec's shape."""
        return self.space.high

    @high.setter
    def high(self, value: Any) -> None:
        self._set_bound("high", value)

    def _set_bound(self, name: str, value: Any) -> None:
        bound = torch.as_tensor(value, dtype=self.dtype, device=self.device).expand(self.shape).clone()
        setattr(self.space, name, bound)
        self._refresh()

    def rand(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Uniform samples in ``[low, high]`` (integers with both ends included for discrete dtypes)."""
        full = self._full_shape(shape)
        low, high = self.space.low, self.space.high
        if not torch.compiler.is_compiling() and self._stale(low, high):
            self._refresh()  # the bounds were replaced or edited in place since the constants were computed
        if self.domain == "discrete":
            r = torch.rand(full, dtype=torch.float64, device=self.device).mul_(self._scale).floor_()
            return r.to(self.dtype).add_(low).clamp_(max=high)
        if self._finite:
            return torch.addcmul(low, torch.rand(full, dtype=self.dtype, device=self.device), self._scale)
        # Infinite bounds: uniform where finite, normal elsewhere, then clamped into the box.
        uni = torch.addcmul(low, torch.rand(full, dtype=self.dtype, device=self.device), self._scale)
        normal = torch.randn(full, dtype=self.dtype, device=self.device)
        return torch.where(torch.isfinite(uni), uni, normal).clamp_(low, high)

    def _in_domain(self, val: torch.Tensor) -> bool:
        return bool(((val >= self.space.low) & (val <= self.space.high)).all())

    def _describe_domain(self) -> str:
        return f" [low={self.space.low.min().item()}, high={self.space.high.max().item()}]"

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        if self.domain == "discrete" and val.dtype.is_floating_point:
            val = val.round()
        val = val.to(self.dtype)
        return torch.clamp(val, self.space.low, self.space.high)

    def cardinality(self) -> int | float:
        """``high - low + 1`` per element multiplied out for integer dtypes, ``inf`` otherwise."""
        if self.domain == "continuous":
            return float("inf")
        return int(torch.prod(self.space.high.double() - self.space.low.double() + 1).item())

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """All values of an integer ``Bounded`` spec, stacked along a new first dim."""
        if self.domain == "continuous":
            return super().enumerate(use_mask)
        flat_low, flat_high = self.space.low.reshape(-1), self.space.high.reshape(-1)
        ranges = [
            torch.arange(int(lo), int(hi) + 1, device=self.device) for lo, hi in zip(flat_low, flat_high)
        ]
        if not ranges:
            return torch.zeros((1, *self.shape), dtype=self.dtype, device=self.device)
        grid = torch.cartesian_prod(*ranges) if len(ranges) > 1 else ranges[0].unsqueeze(-1)
        return grid.to(self.dtype).reshape(-1, *self.shape)

    def _new(self, **state: Any) -> Bounded:
        return Bounded(**state)

    def _state(self) -> dict[str, Any]:
        return {
            "low": self.space.low,
            "high": self.space.high,
            "shape": self.shape,
            "device": self.device,
            "dtype": self.dtype,
        }


class BoundedContinuous(Bounded):
    """:class:`Bounded` with a floating dtype (what ``Bounded(...)`` returns for float dtypes).

    Examples:
        >>> isinstance(Bounded(0.0, 1.0, shape=(2,)), BoundedContinuous)
        True
    """


class BoundedDiscrete(Bounded):
    """:class:`Bounded` with an integer dtype (what ``Bounded(...)`` returns for integer dtypes).

    Examples:
        >>> import torch
        >>> spec = BoundedDiscrete(0, 2, shape=(2,), dtype=torch.int64)
        >>> spec.cardinality()
        9
    """

    def __init__(
        self,
        low: float | torch.Tensor | np.ndarray | None = None,
        high: float | torch.Tensor | np.ndarray | None = None,
        shape: SHAPE_TYPING = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | str | None = torch.int64,
        **kwargs: Any,
    ) -> None:
        super().__init__(low, high, shape, device, dtype if dtype is not None else torch.int64, **kwargs)
