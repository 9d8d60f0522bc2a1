"""``Unbounded`` specs: any value of a given dtype (``UnboundedContinuous`` / ``UnboundedDiscrete``)."""

from __future__ import annotations

from typing import Any

import torch

from tdrl.data.tensor_specs._base import DEVICE_TYPING, SHAPE_TYPING, TensorSpec, _as_dtype
from tdrl.data.tensor_specs.spaces import ContinuousBox


def _dtype_limits(dtype: torch.dtype) -> tuple[float | int | bool, float | int | bool]:
    if dtype is torch.bool:
        return False, True
    info: torch.finfo | torch.iinfo
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
    else:
        info = torch.iinfo(dtype)
    return info.min, info.max


class Unbounded(TensorSpec):
    """A tensor with no bounds on its values.

    ``Unbounded(...)`` returns an :class:`UnboundedContinuous` for floating dtypes and an
    :class:`UnboundedDiscrete` for integer and boolean dtypes (``isinstance(spec, Unbounded)`` holds for
    both). ``rand()`` samples a standard normal for floats and uniform integers over the dtype's range.

    Args:
        shape: full shape, leading batch dims included. Defaults to ``(1,)``.
        device: device of the tensor. Defaults to CPU.
        dtype: dtype of the tensor. Defaults to ``torch.get_default_dtype()``.

    Examples:
        >>> import torch
        >>> spec = Unbounded(3)
        >>> spec.rand((2,)).shape
        torch.Size([2, 3])
        >>> Unbounded(shape=(2,), dtype=torch.int64).domain
        'discrete'
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Unbounded:
        if cls is Unbounded:
            dtype = _as_dtype(
                kwargs.get("dtype", args[2] if len(args) > 2 else None), torch.get_default_dtype()
            )
            cls = UnboundedContinuous if dtype.is_floating_point or dtype.is_complex else UnboundedDiscrete
        return super().__new__(cls)

    def __init__(
        self,
        shape: SHAPE_TYPING = (1,),
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | str | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"Unbounded got unexpected keyword arguments {sorted(kwargs)}.")
        dtype = _as_dtype(dtype, torch.get_default_dtype())
        device = device if device is not None else "cpu"
        domain = "continuous" if dtype.is_floating_point or dtype.is_complex else "discrete"
        super().__init__(shape, None, device, dtype, domain)
        self._float = dtype.is_floating_point or dtype.is_complex
        self._space: ContinuousBox | None = None

    @property
    def space(self) -> ContinuousBox:
        """The dtype's full range as a :class:`ContinuousBox`, built on first access."""
        if self._space is None:
            low, high = _dtype_limits(self.dtype)
            self._space = ContinuousBox(
                torch.full(self.shape, low, dtype=self.dtype, device=self.device),
                torch.full(self.shape, high, dtype=self.dtype, device=self.device),
            )
        return self._space

    @space.setter
    def space(self, value: ContinuousBox | None) -> None:
        self._space = value

    def rand(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Standard-normal floats, or integers uniform over the dtype's range."""
        full = self._full_shape(shape)
        if self._float:
            return torch.randn(full, dtype=self.dtype, device=self.device)
        if self.dtype is torch.bool:
            return torch.randint(0, 2, full, device=self.device).bool()
        low, high = _dtype_limits(self.dtype)
        return torch.randint(int(low), int(high), full, dtype=self.dtype, device=self.device)

    def _new(self, **state: Any) -> Unbounded:
        return Unbounded(**state)

    def _state(self) -> dict[str, Any]:
        return {"shape": self.shape, "device": self.device, "dtype": self.dtype}


class UnboundedContinuous(Unbounded):
    """:class:`Unbounded` with a floating dtype (what ``Unbounded(...)`` returns for float dtypes).

    Examples:
        >>> isinstance(Unbounded(2), UnboundedContinuous)
        True
    """


class UnboundedDiscrete(Unbounded):
    """:class:`Unbounded` with an integer or bool dtype (what ``Unbounded(...)`` returns for them).

    Examples:
        >>> import torch
        >>> UnboundedDiscrete(2).dtype
        torch.int64
    """

    def __init__(
        self,
        shape: SHAPE_TYPING = (1,),
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | str | None = torch.int64,
        **kwargs: Any,
    ) -> None:
        super().__init__(shape, device, dtype if dtype is not None else torch.int64, **kwargs)
