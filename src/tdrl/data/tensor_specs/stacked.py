"""Stacking specs: ``torch.stack`` of specs, ``Stacked`` (heterogeneous leaves) and ``StackedComposite``.

``torch.stack`` returns a dense spec whenever it can: identical specs give the expanded spec; specs of the
same type and shape that differ only in per-element tensors (bounds, masks) give one spec with those tensors
stacked; Composites with the same keys are stacked entry by entry. Only genuinely heterogeneous specs
(different shapes, types or keys) become a lazy :class:`Stacked` / :class:`StackedComposite`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import torch
from tensordict import LazyStackedTensorDict, TensorDictBase

from tdrl.data.tensor_specs._base import HANDLED_FUNCTIONS, SHAPE_TYPING, TensorSpec, _as_size, _tensors_equal
from tdrl.data.tensor_specs._composite_keys import _is_string_key
from tdrl.data.tensor_specs.composite import Composite


def _stacked_shape(specs: Sequence[TensorSpec], dim: int) -> torch.Size:
    shapes = [s.shape for s in specs]
    if len({len(s) for s in shapes}) != 1:
        raise ValueError(f"Cannot stack specs with different numbers of dims: {[tuple(s) for s in shapes]}.")
    merged = [d if all(s[i] == d for s in shapes) else -1 for i, d in enumerate(shapes[0])]
    return torch.Size([*merged[:dim], len(specs), *merged[dim:]])


def _norm_dim(dim: int, ndim: int) -> int:
    norm = dim + ndim + 1 if dim < 0 else dim
    if not 0 <= norm <= ndim:
        raise IndexError(f"Cannot stack specs of {ndim} dims along dim {dim}.")
    return norm


def _dense_stack(specs: Sequence[TensorSpec], dim: int) -> TensorSpec | None:
    """One spec with per-element tensors stacked, or ``None`` if the specs differ otherwise."""
    first = specs[0]
    if dim > first._lead():
        return None
    states = [s._state() for s in specs]
    per_element = set(first._per_element)
    for state in states[1:]:
        for key, value in state.items():
            if key in per_element:
                if (value is None) != (states[0][key] is None):
                    return None
            elif not _tensors_equal(value, states[0][key]):
                return None
    new = dict(states[0])
    new["shape"] = _stacked_shape(specs, dim)
    for key in per_element:
        if new.get(key) is not None:
            new[key] = torch.stack([state[key] for state in states], dim)
    return first._new(**new)


def stack_specs(specs: Sequence[TensorSpec], dim: int = 0, *, out: Any = None) -> TensorSpec:
    """Stacks specs along a new dim ``dim`` (what ``torch.stack(specs, dim)`` calls).

    Args:
        specs: the specs to stack; they must have the same number of dims.
        dim: position of the new dim.
        out: unsupported, must be ``None`` (present for ``torch.stack``'s signature).

    Returns:
        A dense spec when possible, else a :class:`Stacked` or :class:`StackedComposite`.

    Examples:
        >>> import torch
        >>> from tdrl.data import Bounded
        >>> spec = torch.stack([Bounded(0.0, 1.0, shape=(2,)), Bounded(0.0, 2.0, shape=(2,))], 0)
        >>> spec.high
        tensor([[1., 1.],
                [2., 2.]])
    """
    if out is not None:
        raise TypeError("torch.stack of specs does not support `out=`.")
    specs = list(specs)
    if not specs:
        raise ValueError("Cannot stack an empty list of specs.")
    first = specs[0]
    dim = _norm_dim(dim, first.ndim)
    if all(isinstance(s, Composite) for s in specs):
        return _stack_composites(cast("list[Composite]", specs), dim)
    same = all(type(s) is type(first) and s.shape == first.shape for s in specs)
    if same and not isinstance(first, Stacked) and dim <= first._lead():
        if all(s == first for s in specs[1:]):
            return first.unsqueeze(dim).expand(_stacked_shape(specs, dim))
        dense = _dense_stack(specs, dim)
        if dense is not None:
            return dense
    return Stacked(*specs, dim=dim)


def _stack_composites(specs: list[Composite], dim: int) -> Composite:
    first = specs[0]
    if any(type(s) is not Composite for s in specs):
        return StackedComposite(*specs, dim=dim)
    if any(s.shape != first.shape or s.device != first.device for s in specs):
        return StackedComposite(*specs, dim=dim)
    keys = list(first._specs)
    if any(list(s._specs) != keys for s in specs):
        return StackedComposite(*specs, dim=dim)
    out = Composite(shape=_stacked_shape(specs, dim), device=first.device)
    for key in keys:
        entries = [s._specs[key] for s in specs]
        if all(e is None for e in entries):
            out._specs[key] = None
        elif any(e is None for e in entries):
            return StackedComposite(*specs, dim=dim)
        else:
            out._specs[key] = stack_specs([e for e in entries if e is not None], dim)
    return out


class _LazyStack:
    """What :class:`Stacked` and :class:`StackedComposite` share: a list of member specs and a stack dim."""

    dim: int
    ndim: int

    if TYPE_CHECKING:  # the concrete classes take the member specs and the stack dim

        def __init__(self, *specs: Any, dim: int = 0) -> None: ...

    def _members(self) -> list[Any]:
        raise TypeError(f"{type(self).__name__} must define _members().")

    def _slices(self, val: Any) -> list[Any]:
        raise TypeError(f"{type(self).__name__} must define _slices().")

    @property
    def stack_dim(self) -> int:
        """The dim along which the specs are stacked."""
        return self.dim

    def is_in(self, val: Any) -> bool:
        """Whether each slice along the stack dim is in its spec."""
        return self._mismatch(val) is None

    def _mismatch(self, val: Any) -> str | None:
        try:
            parts, members = self._slices(val), self._members()
        except (TypeError, IndexError, RuntimeError) as err:
            return f"cannot split the value along the stack dim {self.dim}: {err}"
        if len(parts) != len(members):
            return f"expected {len(members)} slices along the stack dim, got {len(parts)}"
        for i, (spec, part) in enumerate(zip(members, parts)):
            reason = spec._mismatch(part)
            if reason is not None:
                return f"stacked element {i}: {reason}"
        return None

    def unbind(self, dim: int = 0) -> tuple[Any, ...]:
        """The stacked specs (only along the stack dim)."""
        dim = dim + self.ndim if dim < 0 else dim
        if dim != self.dim:
            raise ValueError(
                f"{type(self).__name__} can only be unbound along its stack dim {self.dim}, not {dim}."
            )
        return tuple(self._members())

    def expand(self, *shape: Any) -> Any:
        """Prepends batch dims to every stacked spec."""
        new = torch.Size(shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
        extra = new[: len(new) - self.ndim]
        return type(self)(*[s.expand(*extra, *s.shape) for s in self._members()], dim=self.dim + len(extra))

    def clone(self) -> Any:
        """A deep copy."""
        return type(self)(*[s.clone() for s in self._members()], dim=self.dim)

    def to(self, dest: Any) -> Any:
        """Every stacked spec moved or cast."""
        return type(self)(*[s.to(dest) for s in self._members()], dim=self.dim)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self) or other.dim != self.dim:
            return False
        mine, theirs = self._members(), other._members()
        return len(mine) == len(theirs) and all(a == b for a, b in zip(mine, theirs))

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_stacked, (type(self), tuple(self._members()), self.dim))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dim={self.dim}, specs={self._members()})"  # type: ignore[attr-defined]


class Stacked(_LazyStack, TensorSpec):
    """A lazy stack of heterogeneous leaf specs (different shapes or types) along ``dim``.

    Dims where the stacked specs differ are reported as ``-1`` in ``shape``. Values are stacked tensors
    when the per-spec samples share a shape, nested tensors otherwise (stack dim 0 only).

    Args:
        *specs: the stacked specs (same dtype and device).
        dim: the stack dim.

    Examples:
        >>> import torch
        >>> from tdrl.data import Unbounded
        >>> spec = torch.stack([Unbounded(3), Unbounded(4)], 0)
        >>> spec.shape
        torch.Size([2, -1])
        >>> [s.shape for s in spec.unbind(0)]
        [torch.Size([3]), torch.Size([4])]
    """

    def __init__(self, *specs: TensorSpec, dim: int) -> None:
        if not specs:
            raise ValueError("Stacked needs at least one spec.")
        dtypes = {s.dtype for s in specs}
        if len(dtypes) != 1:
            raise TypeError(f"Stacked specs must share a dtype, got {sorted(map(str, dtypes))}.")
        dim = _norm_dim(dim, specs[0].ndim)
        TensorSpec.__init__(
            self, _stacked_shape(specs, dim), None, specs[0].device, specs[0].dtype, specs[0].domain
        )
        self._specs = list(specs)
        self.dim = dim

    def _members(self) -> list[TensorSpec]:
        return self._specs

    def _combine(self, samples: list[Any], shape: SHAPE_TYPING) -> Any:
        dim = self.dim + (len(_as_size(shape)) if shape is not None else 0)
        if all(isinstance(s, torch.Tensor) for s in samples) and len({s.shape for s in samples}) == 1:
            return torch.stack(samples, dim)
        if dim != 0:
            raise RuntimeError(f"Samples of different shapes can only be nested along dim 0, not {dim}.")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return torch.nested.nested_tensor(samples)

    def rand(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Samples of every stacked spec, stacked (or nested when their shapes differ)."""
        return self._combine([s.rand(shape) for s in self._specs], shape)

    def zero(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Zeros of every stacked spec, stacked (or nested)."""
        return self._combine([s.zero(shape) for s in self._specs], shape)

    def one(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Ones of every stacked spec, stacked (or nested)."""
        return self._combine([s.one(shape) for s in self._specs], shape)

    def _slices(self, value: Any) -> list[Any]:
        if isinstance(value, torch.Tensor) and not value.is_nested:
            return list(value.unbind(value.ndim - self.ndim + self.dim))
        return list(value.unbind(0) if isinstance(value, torch.Tensor) else value)

    def project(self, val: Any) -> Any:
        """Projects each slice into its spec."""
        return self._combine([s.project(p) for s, p in zip(self._specs, self._slices(val))], None)

    def encode(self, val: Any, *, ignore_device: bool = False) -> Any:
        """Encodes each slice with its spec."""
        parts = self._slices(val) if isinstance(val, torch.Tensor) else list(val)
        return self._combine(
            [s.encode(p, ignore_device=ignore_device) for s, p in zip(self._specs, parts)], None
        )

    def type_check(self, value: Any, key: Any = None) -> None:
        """Checks the dtype of each slice."""
        for spec, part in zip(self._specs, self._slices(value)):
            spec.type_check(part, key)

    def __getitem__(self, idx: Any) -> TensorSpec:
        """Integer indexing along the stack dim when it is the first dim."""
        if self.dim == 0 and isinstance(idx, int):
            return self._specs[idx]
        raise IndexError(
            f"Stacked specs only support integer indexing along a leading stack dim, got {idx!r}."
        )

    def _state(self) -> dict[str, Any]:
        return {"dim": self.dim, "specs": self._specs}


class StackedComposite(_LazyStack, Composite):
    """A lazy stack of Composites with different keys (or entry shapes) along ``dim``.

    As a :class:`Composite` it exposes the keys every stacked Composite has, each entry being the stack of
    theirs; ``rand``/``zero``/``one`` return a ``LazyStackedTensorDict`` holding every key; it is read-only.

    Args:
        *specs: the stacked Composites (same shape).
        dim: the stack dim.

    Examples:
        >>> import torch
        >>> from tdrl.data import Composite, Unbounded
        >>> spec = torch.stack([Composite(a=Unbounded(1)), Composite(a=Unbounded(1), b=Unbounded(2))], 0)
        >>> list(spec.keys())
        ['a']
        >>> spec.rand()[1]["b"].shape
        torch.Size([2])
    """

    def __init__(self, *specs: Composite, dim: int) -> None:
        if not specs:
            raise ValueError("StackedComposite needs at least one Composite.")
        dim = _norm_dim(dim, specs[0].ndim)
        if len({s.shape for s in specs}) != 1:
            raise ValueError(f"Stacked Composites must share a shape, got {[tuple(s.shape) for s in specs]}.")
        Composite.__init__(self, shape=_stacked_shape(specs, dim), device=specs[0].device)
        self._stacked = list(specs)
        self.dim = dim
        shared = [k for k in specs[0]._specs if all(k in s._specs and s._specs[k] is not None for s in specs)]
        self._specs = {k: stack_specs([cast(TensorSpec, s._specs[k]) for s in specs], dim) for k in shared}
        self._locked = True

    def _members(self) -> list[Composite]:
        return self._stacked

    def _build(self, method: str, shape: SHAPE_TYPING) -> TensorDictBase:
        dim = self.dim + (len(_as_size(shape)) if shape is not None else 0)
        return LazyStackedTensorDict.maybe_dense_stack(
            [getattr(s, method)(shape) for s in self._stacked], dim
        )

    def _slices(self, val: Any) -> list[Any]:
        if not isinstance(val, TensorDictBase):
            raise TypeError(f"StackedComposite values are TensorDicts, got {type(val).__name__}")
        return list(val.unbind(val.batch_dims - self.ndim + self.dim))

    def project(self, val: TensorDictBase) -> TensorDictBase:  # type: ignore[override]  # TorchRL's spec API: composites read TensorDicts
        """Projects each slice into its Composite."""
        parts = [s.project(p) for s, p in zip(self._stacked, self._slices(val))]
        return LazyStackedTensorDict.maybe_dense_stack(parts, val.batch_dims - self.ndim + self.dim)

    def __getitem__(self, idx: Any) -> Any:
        """Shared keys read the stacked entry; an integer along a leading stack dim gives that Composite."""
        if _is_string_key(idx):
            return Composite.__getitem__(self, idx)
        if self.dim == 0 and isinstance(idx, int):
            return self._stacked[idx]
        raise IndexError(
            f"StackedComposite only supports keys and integer indexing along a leading stack dim, got {idx!r}."
        )

    def reshape(self, *shape: Any) -> Composite:
        """Reshaping a lazy stack is not defined; unbind it or stack Composites with the same keys."""
        raise RuntimeError(
            "Cannot reshape a StackedComposite (its Composites have different keys); unbind it along its "
            f"stack dim {self.dim} first."
        )


def _rebuild_stacked(cls: type, specs: tuple[TensorSpec, ...], dim: int) -> TensorSpec:
    return cls(*specs, dim=dim)


HANDLED_FUNCTIONS[torch.stack] = stack_specs
