"""The :class:`TensorSpec` base class and the shape/device helpers every spec shares.

A spec describes one tensor: its full ``shape`` (leading batch dims included), ``dtype``, ``device``, the
``space`` of values it may hold and a ``domain`` (``"continuous"`` or ``"discrete"``). Shape operations
(``expand``, ``reshape``, ``squeeze``, indexing, ...) are all written once here: each concrete spec only says
how to rebuild itself (:meth:`TensorSpec._state`) and which of its tensors are laid out along its shape
(``_per_element``), and the base class transforms those tensors with the same operation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np
import torch

DEVICE_TYPING = Union[torch.device, str, int]
SHAPE_TYPING = Union[torch.Size, Sequence[int], int, None]

#: Spec classes by name, for conversions between modules that must not import each other
#: (``Categorical.to_one_hot_spec`` builds a ``OneHot`` that itself imports ``Categorical``).
SPEC_REGISTRY: dict[str, type] = {}

#: ``torch`` functions specs implement (``torch.stack``), filled by the modules that implement them.
HANDLED_FUNCTIONS: dict[Callable, Callable] = {}

_DTYPE_NAMES = {"float": torch.float32, "double": torch.float64, "long": torch.int64, "int": torch.int32}


def _as_size(shape: SHAPE_TYPING) -> torch.Size:
    """Normalizes ``None``, an int or a sequence of ints to a :class:`torch.Size`."""
    if shape is None:
        return torch.Size([])
    if isinstance(shape, torch.Size):
        return shape
    if isinstance(shape, (int, np.integer)):
        return torch.Size([int(shape)])
    if isinstance(shape, torch.Tensor):
        return torch.Size(shape.tolist())
    return torch.Size([int(s) for s in shape])


def _varargs_size(shape: tuple[Any, ...]) -> torch.Size:
    """Reads ``f(2, 3)`` and ``f((2, 3))`` / ``f(torch.Size([2, 3]))`` the same way."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        return _as_size(shape[0])
    return _as_size(shape)


def _as_device(device: DEVICE_TYPING | None) -> torch.device | None:
    if device is None or isinstance(device, torch.device):
        return device
    if isinstance(device, int):
        return torch.device("cuda", device)
    return torch.device(device)


def _as_dtype(dtype: torch.dtype | str | None, default: torch.dtype) -> torch.dtype:
    if dtype is None:
        return default
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str):
        name = dtype.removeprefix("torch.")
        found = _DTYPE_NAMES.get(name, getattr(torch, name, None))
        if isinstance(found, torch.dtype):
            return found
    raise TypeError(f"Expected a torch.dtype or its name, got {dtype!r}.")


def _expand_ellipsis(idx: Any, ndim: int) -> tuple[Any, ...]:
    """Turns an index into a tuple with any ``...`` replaced by explicit full slices over ``ndim`` dims.

    After this, the index only touches the leading ``ndim`` dims of any tensor it is applied to, so it can
    be applied unchanged to tensors that carry extra trailing dims (masks, entries of a Composite).
    """
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_ellipsis = sum(1 for i in idx if i is Ellipsis)
    if n_ellipsis == 0:
        return idx
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = _consumed(tuple(i for i in idx if i is not Ellipsis))
    pos = next(j for j, i in enumerate(idx) if i is Ellipsis)
    fill = (slice(None),) * max(ndim - used, 0)
    return idx[:pos] + fill + idx[pos + 1 :]


def _consumed(idx: tuple[Any, ...]) -> int:
    """Number of dims an (ellipsis-free) index tuple consumes."""
    return sum(
        (i.ndim if isinstance(i, torch.Tensor) and i.dtype is torch.bool else 1) for i in idx if i is not None
    )


def _indexed_shape(shape: torch.Size, idx: tuple[Any, ...]) -> torch.Size:
    """Shape of a tensor of ``shape`` after ``tensor[idx]``, computed without allocating."""
    return torch.empty(shape, device="meta")[idx].shape


def _reshaped(shape: torch.Size, new_shape: torch.Size) -> torch.Size:
    """Resolves ``-1`` in ``new_shape`` and checks the element count, like :meth:`torch.Tensor.reshape`."""
    if -1 not in new_shape and math.prod(new_shape) == math.prod(shape):
        return new_shape
    return torch.empty(shape, device="meta").reshape(new_shape).shape


def _squeezed(shape: torch.Size, dim: int | None) -> torch.Size:
    if dim is None:
        return torch.Size([s for s in shape if s != 1])
    dim = dim + len(shape) if dim < 0 else dim
    if not 0 <= dim < max(len(shape), 1):
        raise IndexError(f"squeeze: dim {dim} is out of range for shape {tuple(shape)}.")
    if len(shape) == 0 or shape[dim] != 1:
        return shape
    return torch.Size([*shape[:dim], *shape[dim + 1 :]])


def _unsqueezed(shape: torch.Size, dim: int) -> torch.Size:
    dim = dim + len(shape) + 1 if dim < 0 else dim
    if not 0 <= dim <= len(shape):
        raise IndexError(f"unsqueeze: dim {dim} is out of range for shape {tuple(shape)}.")
    return torch.Size([*shape[:dim], 1, *shape[dim:]])


def _to_tensor(val: Any, dtype: torch.dtype, device: torch.device | None) -> torch.Tensor:
    if isinstance(val, torch.Tensor):
        return val.to(device=device, dtype=dtype) if device is not None else val.to(dtype=dtype)
    if isinstance(val, list) and len(val) == 1 and isinstance(val[0], (np.ndarray, torch.Tensor)):
        # gym >= 0.26 returned single-element lists of arrays.
        val = val[0]
    if isinstance(val, np.ndarray) and not val.flags.writeable:
        val = val.copy()
    return torch.as_tensor(np.asarray(val) if not isinstance(val, torch.Tensor) else val).to(
        dtype=dtype, device=device
    )


def _tensors_equal(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        return a.shape == b.shape and a.device == b.device and bool(torch.equal(a, b))
    return a == b


class TensorSpec:
    """Base class of all tensor specs: what a tensor in a TensorDict may contain.

    Args:
        shape: full shape of the tensor, leading batch dims included.
        space: the value box (``ContinuousBox``, ``CategoricalBox``, ...), or ``None``.
        device: device of the described tensor.
        dtype: dtype of the described tensor.
        domain: ``"continuous"`` or ``"discrete"`` (empty for specs without one).

    Concrete specs implement ``rand``, ``_in_domain``, ``_project`` and ``_state``; everything else
    (``zero``, ``one``, ``is_in``, ``project``, ``encode``, shape operations, ``clone``, ``to``, equality)
    lives here.

    Examples:
        >>> import torch
        >>> from tdrl.data import Unbounded
        >>> spec = Unbounded(shape=(2, 3))
        >>> spec.expand(4, 2, 3).shape
        torch.Size([4, 2, 3])
        >>> spec.is_in(spec.rand((5,)))
        True
    """

    #: Names of the ``_state()`` tensors laid out along ``shape`` (transformed by shape operations).
    _per_element: tuple[str, ...] = ()
    #: Number of trailing dims that shape operations must leave unchanged (the one-hot/feature dim).
    _n_fixed: int = 0
    #: Names of ``_state()`` tensors kept on CPU by :meth:`to` (sizes read as python ints on construction).
    _host_tensors: tuple[str, ...] = ()

    def __init__(
        self,
        shape: SHAPE_TYPING,
        space: Any,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype = torch.float32,
        domain: str = "",
    ) -> None:
        self.shape = _as_size(shape)
        self.space = space
        self.device = _as_device(device)
        self.dtype = dtype
        self.domain = domain

    # ------------------------------------------------------------------ to override
    def rand(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Returns a random value of the spec, with ``shape`` prepended as extra batch dims."""
        raise TypeError(f"{type(self).__name__} does not define rand().")

    def _in_domain(self, val: torch.Tensor) -> bool:
        """Whether every value of ``val`` (already of the right shape and dtype) lies in the space."""
        return True

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        return val.to(self.dtype)

    def _state(self) -> dict[str, Any]:
        """Constructor keyword arguments that rebuild this spec."""
        return {"shape": self.shape, "device": self.device, "dtype": self.dtype}

    def _describe_domain(self) -> str:
        return ""

    # ------------------------------------------------------------------ basic properties
    @property
    def ndim(self) -> int:
        """Number of dims of the spec's shape."""
        return len(self.shape)

    def ndimension(self) -> int:
        """Number of dims of the spec's shape."""
        return len(self.shape)

    def _full_shape(self, shape: SHAPE_TYPING) -> torch.Size:
        if shape is None:
            return self.shape
        return torch.Size([*_as_size(shape), *self.shape])

    def cardinality(self) -> int | float:
        """Number of distinct values the spec can take (``inf`` for continuous specs)."""
        return float("inf")

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """All values of a discrete spec, stacked along a new first dim."""
        raise TypeError(f"enumerate() needs a discrete spec with a finite space, not {type(self).__name__}.")

    # ------------------------------------------------------------------ values
    def zero(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Returns a zero-filled tensor of the spec's shape (with ``shape`` prepended as batch dims)."""
        return torch.zeros(self._full_shape(shape), dtype=self.dtype, device=self.device)

    def one(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Returns a one-filled tensor of the spec's shape (with ``shape`` prepended as batch dims)."""
        return torch.ones(self._full_shape(shape), dtype=self.dtype, device=self.device)

    def zeros(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Alias of :meth:`zero`."""
        return self.zero(shape)

    def ones(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Alias of :meth:`one`."""
        return self.one(shape)

    def sample(self, shape: SHAPE_TYPING = None) -> torch.Tensor:
        """Alias of :meth:`rand`."""
        return self.rand(shape)

    def _shape_matches(self, shape: torch.Size) -> bool:
        if shape == self.shape:
            return True
        nd = len(self.shape)
        if len(shape) < nd:
            return False
        tail = shape[len(shape) - nd :]
        return tail == self.shape or all(s == t or s == -1 for s, t in zip(self.shape, tail))

    def is_in(self, val: Any) -> bool:
        """Whether ``val`` has the spec's (trailing) shape and dtype and lies in its space."""
        if not isinstance(val, torch.Tensor) or val.dtype != self.dtype or not self._shape_matches(val.shape):
            return False
        return self._in_domain(val)

    def contains(self, item: Any) -> bool:
        """Alias of :meth:`is_in`."""
        return self.is_in(item)

    def _mismatch(self, val: Any) -> str | None:
        """Why ``val`` is not in the spec, or ``None`` if it is."""
        if not isinstance(val, torch.Tensor):
            return f"expected a torch.Tensor, got {type(val).__name__}"
        if val.dtype != self.dtype:
            return f"expected dtype {self.dtype}, got {val.dtype}"
        if not self._shape_matches(val.shape):
            return f"expected shape {tuple(self.shape)} (with optional leading batch dims), got {tuple(val.shape)}"
        if not self._in_domain(val):
            return f"values outside the spec's space{self._describe_domain()}"
        return None

    def assert_is_in(self, value: Any) -> None:
        """Raises an ``AssertionError`` that says what differs when ``value`` is not in the spec."""
        reason = self._mismatch(value)
        if reason is not None:
            raise AssertionError(
                f"Value not in {type(self).__name__} spec: {reason}. Consider calling spec.project(value) first."
            )

    def type_check(self, value: torch.Tensor, key: Any = None) -> None:
        """Raises a ``TypeError`` naming ``key`` when ``value``'s dtype differs from the spec's."""
        if value.dtype is not self.dtype:
            where = f" for key {key!r}" if key is not None else ""
            raise TypeError(f"value.dtype={value.dtype}{where} but {type(self).__name__}.dtype={self.dtype}")

    def project(self, val: torch.Tensor) -> torch.Tensor:
        """Maps ``val`` into the spec's space (returns it unchanged when it already is in)."""
        if self.is_in(val):
            return val
        return self._project(val)

    def encode(self, val: Any, *, ignore_device: bool = False) -> torch.Tensor:
        """Converts ``val`` (numpy array, list, scalar or tensor) to a tensor of the spec's dtype and device.

        Leading batch dims are allowed; the trailing dims must match the spec's shape.
        """
        out = _to_tensor(val, self.dtype, None if ignore_device else self.device)
        if self.shape and not self._shape_matches(out.shape):
            if out.numel() == math.prod(self.shape):
                return out.reshape(self.shape)
            raise RuntimeError(
                f"Shape mismatch in {type(self).__name__}.encode: the value has shape {tuple(out.shape)} "
                f"which is incompatible with the spec shape {tuple(self.shape)}."
            )
        return out

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """Returns ``val`` as a numpy array, checking it first when ``safe`` is true."""
        if safe:
            self.assert_is_in(val)
        return val.detach().cpu().numpy()

    def index(self, index: Any, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Indexes ``tensor_to_index`` with a value of this spec (discrete specs only)."""
        raise TypeError(f"{type(self).__name__}.index() is only defined for discrete action specs.")

    # ------------------------------------------------------------------ rebuild helpers
    def _rebuild(
        self, fn: Callable[[torch.Tensor], torch.Tensor] | None = None, **changes: Any
    ) -> TensorSpec:
        state = self._state()
        if fn is not None:
            for name in self._per_element:
                if state.get(name) is not None:
                    state[name] = fn(state[name])
        state.update(changes)
        return self._new(**state)

    def _new(self, **state: Any) -> TensorSpec:
        return type(self)(**state)

    def clone(self) -> TensorSpec:
        """Returns a deep copy of the spec."""
        state = self._state()
        for name, value in state.items():
            if isinstance(value, torch.Tensor):
                state[name] = value.clone()
        return self._new(**state)

    def to(self, dest: torch.dtype | DEVICE_TYPING) -> TensorSpec:
        """Returns the spec on another device, or with another dtype when ``dest`` is a ``torch.dtype``."""
        if isinstance(dest, torch.dtype):
            return self if dest is self.dtype else self._rebuild(dtype=dest)
        device = _as_device(dest)
        if device == self.device:
            return self
        state = self._state()
        for name, value in state.items():
            if isinstance(value, torch.Tensor) and name not in self._host_tensors:
                state[name] = value.to(device)
        state["device"] = device
        return self._new(**state)

    def clear_device_(self) -> TensorSpec:
        """No-op for leaf specs (a leaf always has a device); Composites override it."""
        return self

    def cpu(self) -> TensorSpec:
        """Returns the spec on CPU."""
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> TensorSpec:
        """Returns the spec on a CUDA device."""
        return self.to("cuda" if device is None else f"cuda:{device}")

    # ------------------------------------------------------------------ shape operations
    def _check_fixed(self, new_shape: torch.Size, op: str) -> None:
        k = self._n_fixed
        if k and (len(new_shape) < k or new_shape[-k:] != self.shape[-k:]):
            raise ValueError(
                f"{op} would change the final dimension of {type(self).__name__} "
                f"(shape {tuple(self.shape)} -> {tuple(new_shape)}); it must remain unchanged."
            )

    def _lead(self) -> int:
        return len(self.shape) - self._n_fixed

    def expand(self, *shape: Any) -> TensorSpec:
        """Returns the spec with extra leading dims, like :meth:`torch.Tensor.expand` (``-1`` keeps a dim)."""
        new = _varargs_size(shape)
        nd = len(self.shape)
        if len(new) < nd:
            raise ValueError(
                f"{type(self).__name__}.expand: the new shape {tuple(new)} has fewer dims than the spec "
                f"shape {tuple(self.shape)}."
            )
        tail = new[len(new) - nd :]
        resolved = torch.Size(
            [*new[: len(new) - nd], *(s if t == -1 else t for s, t in zip(self.shape, tail))]
        )
        for s, t in zip(self.shape, resolved[len(new) - nd :]):
            if s != t and s != 1:
                raise ValueError(
                    f"{type(self).__name__}.expand: the last {nd} dims of the expanded shape {tuple(new)} "
                    f"must match the spec shape {tuple(self.shape)}."
                )
        if resolved == self.shape:
            return self.clone()
        self._check_fixed(resolved, "expand")
        lead, k = self._lead(), len(resolved) - self._n_fixed
        new_lead = resolved[:k]
        return self._rebuild(lambda t: t.expand(*new_lead, *t.shape[lead:]), shape=resolved)

    def reshape(self, *shape: Any) -> TensorSpec:
        """Returns the spec with a new shape holding the same number of elements."""
        new = _reshaped(self.shape, _varargs_size(shape))
        self._check_fixed(new, "reshape")
        lead, new_lead = self._lead(), new[: len(new) - self._n_fixed]
        return self._rebuild(lambda t: t.reshape(*new_lead, *t.shape[lead:]), shape=new)

    def view(self, *shape: Any) -> TensorSpec:
        """Alias of :meth:`reshape`."""
        return self.reshape(*shape)

    def squeeze(self, dim: int | None = None) -> TensorSpec:
        """Removes singleton dims (all leading ones when ``dim`` is None)."""
        if dim is None and self._n_fixed:
            lead = self._lead()
            new = torch.Size([*_squeezed(self.shape[:lead], None), *self.shape[lead:]])
        else:
            new = _squeezed(self.shape, dim)
        if new == self.shape:
            return self
        return self.reshape(new)

    def unsqueeze(self, dim: int) -> TensorSpec:
        """Inserts a singleton dim at ``dim``."""
        return self.reshape(_unsqueezed(self.shape, dim))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> TensorSpec:
        """Flattens dims ``start_dim..end_dim`` into one."""
        return self.reshape(torch.empty(self.shape, device="meta").flatten(start_dim, end_dim).shape)

    def unflatten(self, dim: int, sizes: Sequence[int]) -> TensorSpec:
        """Splits dim ``dim`` into ``sizes``."""
        return self.reshape(torch.empty(self.shape, device="meta").unflatten(dim, sizes).shape)

    def __getitem__(self, idx: Any) -> TensorSpec:
        """Indexes the leading dims of the spec like a tensor of its shape."""
        lead = self._lead()
        idx = _expand_ellipsis(idx, len(self.shape))
        while _consumed(idx) > lead and idx and idx[-1] == slice(None):
            idx = idx[:-1]
        if _consumed(idx) > lead:
            raise IndexError(
                f"{type(self).__name__} of shape {tuple(self.shape)}: only the leading {lead} dims can be "
                f"indexed, the final dim must remain unchanged."
            )
        new_lead = _indexed_shape(self.shape[:lead], idx)
        return self._rebuild(lambda t: t[idx], shape=torch.Size([*new_lead, *self.shape[lead:]]))

    def unbind(self, dim: int = 0) -> tuple[TensorSpec, ...]:
        """Splits the spec along ``dim`` into a tuple of specs."""
        dim = dim + len(self.shape) if dim < 0 else dim
        if not 0 <= dim < self._lead():
            raise ValueError(
                f"Cannot unbind {type(self).__name__} of shape {tuple(self.shape)} along dim {dim}."
            )
        head = (slice(None),) * dim
        return tuple(self[head + (i,)] for i in range(self.shape[dim]))

    # ------------------------------------------------------------------ dunder
    @classmethod
    def __torch_function__(
        cls, func: Callable, types: tuple[type, ...], args: tuple[Any, ...] = (), kwargs: dict | None = None
    ) -> Any:
        handler = HANDLED_FUNCTIONS.get(func)
        if handler is None:
            return NotImplemented
        return handler(*args, **(kwargs or {}))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        mine, theirs = self._state(), other._state()
        return mine.keys() == theirs.keys() and all(_tensors_equal(mine[k], theirs[k]) for k in mine)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(shape={self.shape}, space={self.space}, device={self.device}, "
            f"dtype={self.dtype}, domain={self.domain})"
        )


def _index_select(spec: TensorSpec, dim: int, index: torch.Tensor) -> TensorSpec:
    """``torch.index_select(spec, dim, index)``: the spec indexed by ``index`` along (batch) dim ``dim``."""
    dim = dim + len(spec.shape) if dim < 0 else dim
    return spec[(slice(None),) * dim + (index,)]


def _squeeze(spec: TensorSpec, dim: int | None = None) -> TensorSpec:
    return spec.squeeze(dim)


def _unsqueeze(spec: TensorSpec, dim: int) -> TensorSpec:
    return spec.unsqueeze(dim)


HANDLED_FUNCTIONS[torch.index_select] = _index_select
HANDLED_FUNCTIONS[torch.squeeze] = _squeeze
HANDLED_FUNCTIONS[torch.unsqueeze] = _unsqueeze
