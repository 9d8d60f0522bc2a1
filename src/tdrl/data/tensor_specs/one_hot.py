"""One-hot discrete specs: ``OneHot`` (one category out of ``n``) and ``MultiOneHot`` (several, concatenated)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from tdrl.data.tensor_specs._base import (
    DEVICE_TYPING,
    SHAPE_TYPING,
    SPEC_REGISTRY,
    TensorSpec,
    _as_device,
    _as_dtype,
    _as_size,
)
from tdrl.data.tensor_specs._mask import check_mask, masked_sample
from tdrl.data.tensor_specs.categorical import Categorical, MultiCategorical
from tdrl.data.tensor_specs.spaces import BoxList, CategoricalBox


def _one_hot_valid(val: torch.Tensor) -> bool:
    if val.dtype is not torch.bool and not bool(((val == 0) | (val == 1)).all()):
        return False
    return bool((val.sum(-1) == 1).all())


class OneHot(TensorSpec):
    """One-hot vectors of length ``n`` along the last dim, optionally restricted by an action mask.

    Args:
        n: number of categories (the last dim).
        shape: full shape, leading batch dims included; its last dim must be ``n``. Defaults to ``(n,)``.
        device: device of the tensor. Defaults to CPU.
        dtype: dtype. Defaults to ``torch.bool``.
        use_register: map arbitrary hashable values to categories in :meth:`encode`, in order of arrival.
        mask: optional bool tensor of shape ``shape`` (broadcastable), ``True`` = allowed.

    Examples:
        >>> import torch
        >>> spec = OneHot(4)
        >>> spec.encode(2)
        tensor([False, False,  True, False])
        >>> spec.index(spec.encode(1), torch.arange(8.0).view(2, 4))
        tensor([[1.],
                [5.]])
    """

    _per_element = ("mask",)
    _n_fixed = 1

    def __init__(
        self,
        n: int,
        shape: SHAPE_TYPING = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | str | None = torch.bool,
        use_register: bool = False,
        mask: torch.Tensor | None = None,
    ) -> None:
        shape = _as_size(shape) if shape is not None else torch.Size([n])
        if not shape or shape[-1] != n:
            raise ValueError(f"{type(self).__name__}: the last dim of shape {tuple(shape)} must equal n={n}.")
        device = _as_device(device) or torch.device("cpu")
        super().__init__(shape, self._make_space(n), device, _as_dtype(dtype, torch.bool), "discrete")
        self.use_register = use_register
        self._register: dict[Any, int] = {}
        self.update_mask(mask)

    def _make_space(self, n: int) -> Any:
        return CategoricalBox(n)

    @property
    def n(self) -> int:
        """Number of categories (the one-hot width)."""
        return self.shape[-1]

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (or clears, with ``None``) the action mask, of the spec's shape (broadcastable)."""
        if mask is not None:
            mask = check_mask(mask.to(self.device), self.shape, type(self).__name__)
        self.mask = mask

    def _scatter(self, idx: torch.Tensor, full: torch.Size) -> torch.Tensor:
        out = torch.zeros(full, dtype=self.dtype, device=self.device)
        return out.scatter_(-1, idx, 1)

    def rand(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Uniform one-hot vectors (uniform among allowed categories when a mask is set)."""
        full = self._full_shape(shape)
        if self.mask is None:
            idx = torch.randint(self.n, (*full[:-1], 1), device=self.device)
        else:
            idx = masked_sample(self.mask, full[:-1]).unsqueeze(-1)
        return self._scatter(idx, full)

    def _in_domain(self, val: torch.Tensor) -> bool:
        if not _one_hot_valid(val):
            return False
        return self.mask is None or not bool((val.bool() & ~self.mask).any())

    def _describe_domain(self) -> str:
        return " (exactly one 1 along the last dim" + (
            ", on an allowed category)" if self.mask is not None else ")"
        )

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        scores = val.float()
        if self.mask is not None:
            scores = scores.masked_fill(~self.mask, float("-inf"))
        return self._scatter(scores.argmax(-1, keepdim=True), val.shape)

    def cardinality(self) -> int:
        """Number of categories ``n``."""
        return self.n

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every one-hot vector, stacked along a new first dim (only allowed ones with ``use_mask``)."""
        eye = torch.eye(self.n, dtype=self.dtype, device=self.device)
        if use_mask and self.mask is not None:
            eye = eye[self.mask.reshape(-1, self.n).all(0)]
        lead = self.shape[:-1]
        return eye.view(eye.shape[0], *(1,) * len(lead), self.n).expand(eye.shape[0], *self.shape)

    def encode(self, val: Any, *, ignore_device: bool = False) -> torch.Tensor:
        """Converts a category index (int, list, numpy array, tensor) to a one-hot tensor."""
        if self.use_register and not isinstance(val, torch.Tensor):
            val = self._register.setdefault(val, len(self._register))
        idx = torch.as_tensor(val, device=None if ignore_device else self.device)
        if bool((idx >= self.n).any()) or bool((idx < 0).any()):
            raise ValueError(
                f"{type(self).__name__}.encode: category index {val} is outside [0, {self.n - 1}]."
            )
        return torch.nn.functional.one_hot(idx.long(), self.n).to(self.dtype)

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """Returns the category index (``argmax``) of each one-hot vector as a numpy array."""
        if safe:
            self.assert_is_in(val)
        return val.long().argmax(-1).cpu().numpy()

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Gathers ``tensor_to_index`` at the category selected by the one-hot ``index`` (last dim kept)."""
        idx = index.long().argmax(-1, keepdim=True)
        return tensor_to_index.gather(-1, idx.expand(*tensor_to_index.shape[:-1], 1))

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Converts one-hot vectors to category indices."""
        if safe:
            self.assert_is_in(val)
        return val.long().argmax(-1)

    def to_categorical_spec(self) -> Categorical:
        """The equivalent :class:`Categorical` spec."""
        return Categorical(self.n, shape=self.shape[:-1], device=self.device, mask=self.mask)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Identity (the value already is one-hot)."""
        if safe:
            self.assert_is_in(val)
        return val

    def to_one_hot_spec(self) -> OneHot:
        """The spec itself."""
        return self

    def _state(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "shape": self.shape,
            "device": self.device,
            "dtype": self.dtype,
            "use_register": self.use_register,
            "mask": self.mask,
        }


class MultiOneHot(OneHot):
    """Several one-hot vectors concatenated along the last dim, of sizes ``nvec``.

    Args:
        nvec: size of each one-hot component.
        shape: full shape; its last dim must be ``sum(nvec)``. Defaults to ``(sum(nvec),)``.
        device: device of the tensor. Defaults to CPU.
        dtype: dtype. Defaults to ``torch.bool``.
        use_register: kept for TorchRL compatibility.
        mask: optional bool tensor of the spec's shape (broadcastable), ``True`` = allowed.

    Examples:
        >>> import numpy as np
        >>> spec = MultiOneHot([2, 3])
        >>> spec.encode(np.array([1, 2]))
        tensor([False,  True, False, False,  True])
        >>> spec.to_categorical(spec.encode(np.array([1, 2])))
        tensor([1, 2])
    """

    def __init__(
        self,
        nvec: Sequence[int],
        shape: SHAPE_TYPING = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | str | None = torch.bool,
        use_register: bool = False,
        mask: torch.Tensor | None = None,
    ) -> None:
        self.nvec = [int(n) for n in (nvec.tolist() if isinstance(nvec, torch.Tensor) else nvec)]
        total = sum(self.nvec)
        shape = _as_size(shape) if shape is not None else torch.Size([total])
        if not shape or shape[-1] != total:
            raise ValueError(
                f"MultiOneHot: the last dim of shape {tuple(shape)} must equal sum(nvec)={total}."
            )
        super().__init__(total, shape, device, dtype, use_register, mask)
        self._nvec_f = torch.tensor(self.nvec, dtype=torch.float64, device=self.device)
        self._offsets = torch.tensor(
            [0, *np.cumsum(self.nvec)[:-1].tolist()], dtype=torch.long, device=self.device
        )

    def _make_space(self, n: int) -> Any:
        return BoxList.from_nvec(self.nvec)

    def rand(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """One uniform category per component (uniform among allowed ones when a mask is set)."""
        full = self._full_shape(shape)
        lead = full[:-1]
        if self.mask is None:
            rnd = torch.rand((*lead, len(self.nvec)), dtype=torch.float64, device=self.device)
            idx = rnd.mul_(self._nvec_f).floor_().long()
        else:
            idx = torch.stack([masked_sample(m, lead) for m in self._split(self.mask)], -1)
        return self._scatter(idx + self._offsets, full)

    def _split(self, val: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.split(val, self.nvec, dim=-1)

    def _in_domain(self, val: torch.Tensor) -> bool:
        if not all(_one_hot_valid(v) for v in self._split(val)):
            return False
        return self.mask is None or not bool((val.bool() & ~self.mask).any())

    def _describe_domain(self) -> str:
        return f" (exactly one 1 in each component of sizes {self.nvec})"

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        scores = val.float()
        if self.mask is not None:
            scores = scores.masked_fill(~self.mask, float("-inf"))
        idx = torch.stack([s.argmax(-1) for s in self._split(scores)], -1)
        return self._scatter(idx + self._offsets, val.shape)

    def cardinality(self) -> int:
        """Number of joint values: the product of ``nvec``."""
        return int(np.prod(self.nvec))

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every joint one-hot value (cartesian product of the components), along a new first dim."""
        cats = MultiCategorical(self.nvec, device=self.device).enumerate()
        out = self._scatter(cats + self._offsets, torch.Size([cats.shape[0], self.n]))
        if use_mask and self.mask is not None:
            out = out[[self.is_in(row.expand(self.shape)) for row in out]]
        lead = self.shape[:-1]
        return out.view(out.shape[0], *(1,) * len(lead), self.n).expand(out.shape[0], *self.shape)

    def encode(self, val: Any, *, ignore_device: bool = False) -> torch.Tensor:
        """Converts per-component category indices (last dim of size ``len(nvec)``) to a multi-one-hot."""
        idx = torch.as_tensor(val, device=None if ignore_device else self.device).long()
        if (
            idx.shape[-1:] != (len(self.nvec),)
            or bool((idx < 0).any())
            or bool((idx >= self._offsets.new_tensor(self.nvec).to(idx.device)).any())
        ):
            raise ValueError(
                f"MultiOneHot.encode: expected {len(self.nvec)} indices below nvec={self.nvec} along the last dim, "
                f"got {val}."
            )
        full = torch.Size([*idx.shape[:-1], self.n])
        return torch.zeros(full, dtype=self.dtype, device=idx.device).scatter_(
            -1, idx + self._offsets.to(idx.device), 1
        )

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """Returns the per-component category indices as a numpy array."""
        return self.to_categorical(val, safe).cpu().numpy()

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Gathers one entry per component of ``tensor_to_index`` (last dim ``sum(nvec)``) at ``index``."""
        idx = self.to_categorical(index) + self._offsets.to(index.device)
        return tensor_to_index.gather(-1, idx.expand(*tensor_to_index.shape[:-1], len(self.nvec)))

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Converts to per-component category indices (last dim ``len(nvec)``)."""
        if safe:
            self.assert_is_in(val)
        return torch.stack([v.long().argmax(-1) for v in self._split(val)], -1)

    def to_categorical_spec(self) -> MultiCategorical:
        """The equivalent :class:`MultiCategorical` spec."""
        return MultiCategorical(
            self.nvec, shape=(*self.shape[:-1], len(self.nvec)), device=self.device, mask=self.mask
        )

    def _state(self) -> dict[str, Any]:
        state = super()._state()
        del state["n"]
        return {"nvec": self.nvec, **state}


SPEC_REGISTRY["OneHot"] = OneHot
SPEC_REGISTRY["MultiOneHot"] = MultiOneHot
