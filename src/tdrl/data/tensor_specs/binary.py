"""``Binary``: independent 0/1 values along the last dim."""

from __future__ import annotations

from typing import Any

import torch

from tdrl.data.tensor_specs._base import DEVICE_TYPING, SHAPE_TYPING, SPEC_REGISTRY, _as_size
from tdrl.data.tensor_specs.categorical import Categorical


class Binary(Categorical):
    """A tensor of independent binary values (each 0 or 1), like a multi-label target.

    As in TorchRL, it is a :class:`Categorical` with ``n == 2`` categories per element; the number of
    binary values is ``shape[-1]``.

    Args:
        n: number of binary values (the last dim); inferred from ``shape`` when omitted.
        shape: full shape, leading batch dims included. Defaults to ``(n,)``.
        device: device of the tensor. Defaults to CPU.
        dtype: dtype. Defaults to ``torch.int8``.

    Examples:
        >>> spec = Binary(3)
        >>> spec.rand((2,)).shape
        torch.Size([2, 3])
        >>> import torch
        >>> spec.project(torch.tensor([3.0, -1.0, 0.4]))
        tensor([1, 0, 0], dtype=torch.int8)
    """

    _per_element = ()
    _n_fixed = 1  # the final dim holds the n binary values: it is never indexed away (TorchRL raises too)

    def __init__(
        self,
        n: int | None = None,
        shape: SHAPE_TYPING = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | str = torch.int8,
    ) -> None:
        if shape is not None:
            shape = _as_size(shape)
        elif n is not None:
            shape = torch.Size([n])
        else:
            raise TypeError("Binary needs `n` or `shape`.")
        if n is not None and (not shape or shape[-1] != n):
            raise ValueError(f"Binary: the last dim of shape {tuple(shape)} must equal n={n}.")
        super().__init__(2, shape=shape, device=device, dtype=dtype)

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Binary specs take no mask; only ``None`` is accepted."""
        if mask is not None:
            raise ValueError("Binary specs do not support masks.")
        self.mask = None

    def rand(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Independent fair 0/1 draws."""
        return torch.randint(0, 2, self._full_shape(shape), dtype=self.dtype, device=self.device)

    def _in_domain(self, val: torch.Tensor) -> bool:
        return bool(((val == 0) | (val == 1)).all())

    def _describe_domain(self) -> str:
        return " {0, 1}"

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        return (val > 0.5).to(self.dtype)

    def _state(self) -> dict[str, Any]:
        return {"shape": self.shape, "device": self.device, "dtype": self.dtype}


SPEC_REGISTRY["Binary"] = Binary
