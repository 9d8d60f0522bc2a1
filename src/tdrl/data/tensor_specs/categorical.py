"""Integer-index discrete specs: ``Categorical`` (one index in ``0..n-1``) and ``MultiCategorical``."""

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
from tdrl.data.tensor_specs._mask import check_mask, mask_allows, masked_sample, nearest_allowed
from tdrl.data.tensor_specs.spaces import BoxList, CategoricalBox


class Categorical(TensorSpec):
    """Integer indices in ``0..n-1``, optionally restricted by an action mask.

    Args:
        n: number of categories.
        shape: full shape, leading batch dims included. Defaults to ``()`` (one scalar index).
        device: device of the tensor. Defaults to CPU.
        dtype: integer dtype of the tensor. Defaults to ``torch.int64``.
        mask: optional bool tensor of shape ``(*shape, n)`` (broadcastable), ``True`` = allowed.

    Examples:
        >>> import torch
        >>> spec = Categorical(4, shape=(3,))
        >>> spec.rand().shape
        torch.Size([3])
        >>> spec.update_mask(torch.tensor([False, True, False, False]))
        >>> spec.rand()
        tensor([1, 1, 1])
    """

    _per_element: tuple[str, ...] = ("mask",)

    def __init__(
        self,
        n: int,
        shape: SHAPE_TYPING = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | str = torch.int64,
        mask: torch.Tensor | None = None,
    ) -> None:
        dtype = _as_dtype(dtype, torch.int64)
        super().__init__(
            shape, CategoricalBox(n), _as_device(device) or torch.device("cpu"), dtype, "discrete"
        )
        self.update_mask(mask)

    @property
    def n(self) -> int:
        """Number of categories."""
        return self.space.n

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (or clears, with ``None``) the action mask, of shape ``(*shape, n)`` (broadcastable)."""
        if mask is not None:
            mask = check_mask(mask.to(self.device), torch.Size([*self.shape, self.n]), type(self).__name__)
        self.mask = mask

    def rand(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Uniform indices (uniform among allowed ones when a mask is set)."""
        full = self._full_shape(shape)
        if self.mask is None:
            return torch.randint(self.n, full, dtype=self.dtype, device=self.device)
        return masked_sample(self.mask, full).to(self.dtype)

    def _in_domain(self, val: torch.Tensor) -> bool:
        if val.dtype is torch.bool and self.mask is None and self.n >= 2:
            return True  # done/terminated flags: every bool is a valid category
        if not bool(((val >= 0) & (val < self.n)).all()):
            return False
        return self.mask is None or mask_allows(self.mask, val)

    def _describe_domain(self) -> str:
        return f" [0, {self.n - 1}]" + (" under the mask" if self.mask is not None else "")

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        if val.dtype.is_floating_point:
            val = val.round()
        val = val.long().clamp(0, self.n - 1)
        if self.mask is not None:
            val = nearest_allowed(self.mask, val)
        return val.to(self.dtype)

    def cardinality(self) -> int:
        """Number of categories ``n``."""
        return self.n

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every category, stacked along a new first dim (only allowed ones with ``use_mask``)."""
        arange = torch.arange(self.n, device=self.device).to(self.dtype)
        if use_mask and self.mask is not None:
            allowed = self.mask.reshape(-1, self.n).all(0)
            arange = arange[allowed]
        return arange.view(-1, *(1,) * self.ndim).expand(arange.shape[0], *self.shape)

    def encode(self, val: Any, *, ignore_device: bool = False) -> torch.Tensor:
        """Converts an index (int, list, numpy array, tensor) to a tensor of the spec's dtype."""
        if isinstance(val, (int, np.integer)):
            return torch.full(
                self.shape, int(val), dtype=self.dtype, device=None if ignore_device else self.device
            )
        return super().encode(val, ignore_device=ignore_device)

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Gathers ``tensor_to_index[..., index]`` along its last dim (one index per row, or a trailing dim)."""
        idx = index.long()
        if idx.ndim < tensor_to_index.ndim:
            idx = idx.unsqueeze(-1)
        return tensor_to_index.gather(-1, idx.expand(*tensor_to_index.shape[:-1], idx.shape[-1]))

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Converts indices to one-hot bool vectors."""
        if safe:
            self.assert_is_in(val)
        return torch.nn.functional.one_hot(val.long(), self.n).bool()

    def to_one_hot_spec(self) -> TensorSpec:
        """The equivalent :class:`OneHot` spec."""
        return SPEC_REGISTRY["OneHot"](
            self.n, shape=(*self.shape, self.n), device=self.device, dtype=torch.bool, mask=self.mask
        )

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Identity (the value already is categorical)."""
        if safe:
            self.assert_is_in(val)
        return val

    def to_categorical_spec(self) -> Categorical:
        """The spec itself."""
        return self

    def _state(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "shape": self.shape,
            "device": self.device,
            "dtype": self.dtype,
            "mask": self.mask,
        }


class MultiCategorical(Categorical):
    """Several independent categorical indices along the last dim, component ``i`` in ``0..nvec[i]-1``.

    Args:
        nvec: number of categories of each component (a sequence, a tensor of the spec's shape, or an int
            repeated over ``shape[-1]``).
        shape: full shape, leading batch dims included. Defaults to ``nvec``'s shape.
        device: device of the tensor. Defaults to CPU.
        dtype: integer dtype. Defaults to ``torch.int64``.
        mask: optional bool tensor of shape ``(*shape[:-1], sum(nvec))``, ``True`` = allowed.
        remove_singleton: kept for TorchRL compatibility (a single-component spec keeps its last dim).

    Examples:
        >>> import torch
        >>> spec = MultiCategorical([2, 3])
        >>> spec.rand((4,)).shape
        torch.Size([4, 2])
        >>> spec.project(torch.tensor([5, -1]))
        tensor([1, 0])
    """

    _per_element = ("nvec", "mask")
    _n_fixed = 1
    _host_tensors = ("nvec",)

    def __init__(
        self,
        nvec: Sequence[int] | torch.Tensor | int,
        shape: SHAPE_TYPING = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | str | None = torch.int64,
        mask: torch.Tensor | None = None,
        remove_singleton: bool = True,
    ) -> None:
        device = _as_device(device) or torch.device("cpu")
        # nvec is read on CPU (component sizes are python ints), then placed on the spec's device.
        nvec_t = torch.as_tensor(nvec.cpu() if isinstance(nvec, torch.Tensor) else nvec, dtype=torch.long)
        if nvec_t.ndim == 0:
            nvec_t = nvec_t.expand(_as_size(shape)[-1:] if shape is not None else (1,))
        shape = _as_size(shape) if shape is not None else nvec_t.shape
        if not shape or shape[-1] != nvec_t.shape[-1]:
            raise ValueError(
                f"MultiCategorical: the last dim of shape {tuple(shape)} must equal the number of components "
                f"{nvec_t.shape[-1]} of nvec."
            )
        nvec_t = nvec_t.expand(shape)
        self._components = nvec_t.reshape(-1, shape[-1])[0].tolist() if nvec_t.numel() else []
        self._nvec_cpu = nvec_t
        self.nvec = nvec_t.to(device)
        self.remove_singleton = remove_singleton
        self._nvec_f = self.nvec.double()
        TensorSpec.__init__(
            self,
            shape,
            BoxList.from_nvec(self._components),
            device,
            _as_dtype(dtype, torch.int64),
            "discrete",
        )
        self.update_mask(mask)

    @property
    def n(self) -> int:
        """Total number of categories over all components (the one-hot width)."""
        return int(sum(self._components))

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (or clears) the mask, of shape ``(*shape[:-1], sum(nvec))`` (broadcastable)."""
        if mask is not None:
            expected = torch.Size([*self.shape[:-1], sum(self._components)])
            mask = check_mask(mask.to(self.device), expected, type(self).__name__)
        self.mask = mask

    def _split_mask(self) -> tuple[torch.Tensor, ...]:
        if self.mask is None:
            raise RuntimeError(f"{type(self).__name__}: no mask is set.")
        return torch.split(self.mask, self._components, dim=-1)

    def rand(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Uniform indices per component (uniform among allowed ones when a mask is set)."""
        full = self._full_shape(shape)
        if self.mask is None:
            out = (
                torch.rand(full, dtype=torch.float64, device=self.device)
                .mul_(self._nvec_f)
                .floor_()
                .to(self.dtype)
            )
        else:
            out = torch.stack([masked_sample(m, full[:-1]) for m in self._split_mask()], -1).to(self.dtype)
        # TorchRL: a one-component spec of shape [1] samples without its singleton dim (remove_singleton).
        return out.squeeze(-1) if self.remove_singleton and self.shape == (1,) else out

    def _squeezed_sample(self, val: Any) -> bool:
        return (
            self.remove_singleton
            and self.shape == (1,)
            and isinstance(val, torch.Tensor)
            and (val.ndim == 0 or val.shape[-1] != 1)
        )

    def is_in(self, val: Any) -> bool:
        """Whether ``val`` is in the spec (a ``[1]`` spec also accepts its squeezed samples, as in TorchRL)."""
        return super().is_in(val.unsqueeze(-1) if self._squeezed_sample(val) else val)

    def _in_domain(self, val: torch.Tensor) -> bool:
        if not bool(((val >= 0) & (val < self.nvec)).all()):
            return False
        if self.mask is None:
            return True
        return all(mask_allows(m, v) for m, v in zip(self._split_mask(), val.unbind(-1)))

    def _describe_domain(self) -> str:
        return f" [0, nvec-1] with nvec={self._components}"

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        if val.dtype.is_floating_point:
            val = val.round()
        val = torch.minimum(val.long().clamp(min=0), self.nvec - 1)
        if self.mask is not None:
            val = torch.stack([nearest_allowed(m, v) for m, v in zip(self._split_mask(), val.unbind(-1))], -1)
        return val.to(self.dtype)

    def cardinality(self) -> int:
        """Number of joint values: the product of ``nvec``."""
        return int(np.prod(self._components))

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every joint value (cartesian product of the components), stacked along a new first dim."""
        ranges = [torch.arange(n, device=self.device) for n in self._components]
        grid = torch.cartesian_prod(*ranges) if len(ranges) > 1 else ranges[0].unsqueeze(-1)
        if use_mask and self.mask is not None:
            grid = grid[[self.is_in(row.to(self.dtype).expand(self.shape)) for row in grid]]
        lead = self.shape[:-1]
        grid = grid.view(grid.shape[0], *(1,) * len(lead), grid.shape[-1])
        return grid.expand(grid.shape[0], *self.shape).to(self.dtype)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Concatenated one-hot vectors, one per component."""
        if safe:
            self.assert_is_in(val)
        return torch.cat(
            [torch.nn.functional.one_hot(v.long(), n) for v, n in zip(val.unbind(-1), self._components)], -1
        ).bool()

    def to_one_hot_spec(self) -> TensorSpec:
        """The equivalent :class:`MultiOneHot` spec."""
        return SPEC_REGISTRY["MultiOneHot"](
            self._components,
            shape=(*self.shape[:-1], self.n),
            device=self.device,
            dtype=torch.bool,
            mask=self.mask,
        )

    def _state(self) -> dict[str, Any]:
        return {
            "nvec": self._nvec_cpu,
            "shape": self.shape,
            "device": self.device,
            "dtype": self.dtype,
            "mask": self.mask,
            "remove_singleton": self.remove_singleton,
        }


SPEC_REGISTRY["Categorical"] = Categorical
SPEC_REGISTRY["MultiCategorical"] = MultiCategorical
