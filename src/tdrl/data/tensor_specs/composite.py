"""``Composite``: a nested, dict-like spec describing a whole TensorDict."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from tensordict import NestedKey, TensorDict, TensorDictBase, is_tensorclass

from tdrl.data.tensor_specs._base import (
    DEVICE_TYPING,
    SHAPE_TYPING,
    TensorSpec,
    _as_device,
    _as_size,
    _expand_ellipsis,
    _indexed_shape,
    _reshaped,
    _varargs_size,
)
from tdrl.data.tensor_specs._composite_keys import (
    _NO_DEFAULT,
    _STRUCTURE_VERSION,
    _bump,
    _CompositeKeysView,
    _dict_get,
    _is_string_key,
    _norm_key,
)

# Composite attributes that cannot be entry names (TorchRL raises AttributeError for them too).
_RESERVED_KEYS = frozenset({"shape", "device", "dtype", "space"})


class Composite(TensorSpec):
    """A dict of specs (possibly nested) describing a TensorDict, with its own batch ``shape``.

    Every entry's shape starts with the Composite's shape. Nested keys (``spec["a", "b"]``) read and
    write sub-Composites, creating them on assignment. ``rand()``/``zero()``/``one()`` return a
    ``TensorDict`` whose batch size is the Composite's shape (with extra leading dims if asked).

    Args:
        *args: an optional mapping (or Composite) of entries; nested dicts become sub-Composites.
        shape: batch shape shared by all entries. Defaults to ``()``.
        device: device of all entries, or ``None`` to allow entries on any device.
        data_cls: kept for TorchRL compatibility (the TensorDict class to build).
        step_mdp_static: kept for TorchRL compatibility.
        names: kept for TorchRL compatibility (dim names).
        **kwargs: entries, by key.

    Examples:
        >>> import torch
        >>> from tdrl.data import Bounded, Composite, Unbounded
        >>> spec = Composite(obs=Unbounded((3, 4)), shape=(3,))
        >>> spec["agent", "action"] = Bounded(-1.0, 1.0, shape=(3, 2))
        >>> td = spec.rand()
        >>> td.batch_size, td["agent", "action"].shape
        (torch.Size([3]), torch.Size([3, 2]))
        >>> spec.is_in(td)
        True
        >>> sorted(spec.keys(include_nested=True, leaves_only=True), key=str)
        [('agent', 'action'), 'obs']
    """

    def __init__(
        self,
        *args: Mapping[str, Any] | Composite,
        shape: SHAPE_TYPING = None,
        device: DEVICE_TYPING | None = None,
        data_cls: type | None = None,
        step_mdp_static: bool = False,
        names: Any = None,
        **kwargs: Any,
    ) -> None:
        if len(args) > 1:
            raise TypeError(f"Composite takes at most one positional mapping, got {len(args)}.")
        self._specs: dict[str, TensorSpec | None] = {}
        self._shape = _as_size(shape)
        self._device = _as_device(device)
        self._locked = False
        self._cache: dict[Any, Any] = {}
        self._cache_version = -1
        self.space = None
        self.domain = "composite"
        self.data_cls = data_cls
        self.step_mdp_static = step_mdp_static
        self._names = self._checked_names(names)
        self._memoize = False
        if args:
            source = args[0]
            if isinstance(source, Composite):
                source = source._specs
            elif not isinstance(source, Mapping):
                raise TypeError(
                    f"Composite's positional argument must be a mapping, got {type(source).__name__}."
                )
            kwargs = {**source, **kwargs}
        for key, value in kwargs.items():
            self.set(key, value)

    def __getstate__(self) -> dict[str, Any]:
        # Caches are keyed on this process's structure version: never carry them across pickling.
        state = dict(self.__dict__)
        state["_cache"] = {}
        state["_cache_version"] = -1
        return state

    # ------------------------------------------------------------------ attributes
    @property
    def shape(self) -> torch.Size:
        """Batch shape shared by all entries (settable when every entry's shape starts with it)."""
        return self._shape

    @shape.setter
    def shape(self, value: SHAPE_TYPING) -> None:
        value = _as_size(value)
        self._check_unlocked()
        for key, spec in self._specs.items():
            if spec is not None and spec.shape[: len(value)] != value:
                raise ValueError(
                    f"Cannot set Composite.shape to {tuple(value)}: entry {key!r} has shape {tuple(spec.shape)}."
                )
        self._shape = value
        _bump()

    batch_size = shape

    @property
    def device(self) -> torch.device | None:
        """Device of all entries, or ``None``."""
        return self._device

    @device.setter
    def device(self, value: DEVICE_TYPING | None) -> None:
        value = _as_device(value)
        if value is not None and self._device is not None and value != self._device:
            raise RuntimeError(f"Composite is on {self._device}; use .to({value!r}) to move it.")
        if value is not None:
            for key, spec in self._specs.items():
                if spec is not None:
                    self._specs[key] = spec.to(value)
            _bump()  # entries were replaced: cached (key, spec) plans must not keep the old ones
        self._device = value

    @property
    def dtype(self) -> torch.dtype | None:  # type: ignore[override]
        """The dtype shared by all leaves, or ``None`` if they differ."""
        dtypes = {spec.dtype for _, spec in self._leaves()}
        return dtypes.pop() if len(dtypes) == 1 else None

    @property
    def names(self) -> list[str | None]:
        """Names of the batch dims (``None`` for an unnamed dim); kept by :meth:`clone` and :meth:`to`."""
        if self._names is None or len(self._names) != len(self._shape):
            return [None] * len(self._shape)
        return list(self._names)

    def _checked_names(self, names: Any) -> list[str | None] | None:
        if names is None:
            return None
        names = list(names)
        if len(names) != len(self._shape):
            raise ValueError(
                f"Composite: {len(names)} dim names {names} for batch shape {tuple(self._shape)}."
            )
        return names

    def memoize_encode(self, mode: bool = True) -> None:
        """Caches how :meth:`encode` resolves each key to its spec (for inputs with a stable key set).

        Examples:
            >>> import torch
            >>> from tdrl.data import Unbounded
            >>> spec = Composite(obs=Unbounded(3))
            >>> spec.memoize_encode()
            >>> spec.encode({"obs": [1.0, 2.0, 3.0]})["obs"]
            tensor([1., 2., 3.])
        """
        self._memoize = bool(mode)
        self.erase_memoize_cache()
        for spec in self._specs.values():
            if isinstance(spec, Composite):
                spec.memoize_encode(mode)

    def erase_memoize_cache(self) -> None:
        """Clears the cache of :meth:`memoize_encode` (recursively)."""
        self._encode_plans: dict[tuple, list] = {}
        for spec in self._specs.values():
            if isinstance(spec, Composite):
                spec.erase_memoize_cache()

    @property
    def is_locked(self) -> bool:
        """Whether the Composite refuses mutations."""
        return self._locked

    locked = is_locked

    def lock_(self, recurse: bool | None = None) -> Composite:
        """Forbids further mutations (of nested Composites too unless ``recurse=False``)."""
        self._locked = True
        if recurse is not False:
            for spec in self._specs.values():
                if isinstance(spec, Composite):
                    spec.lock_(recurse)
        return self

    def unlock_(self, recurse: bool | None = None) -> Composite:
        """Allows mutations again (of nested Composites too unless ``recurse=False``)."""
        self._locked = False
        if recurse is not False:
            for spec in self._specs.values():
                if isinstance(spec, Composite):
                    spec.unlock_(recurse)
        return self

    def _check_unlocked(self) -> None:
        if self._locked:
            raise RuntimeError("Cannot modify a locked Composite; call unlock_() first.")

    # ------------------------------------------------------------------ caches
    def _cached(self, key: Any, build: Callable[[], Any]) -> Any:
        if self._cache_version != _STRUCTURE_VERSION[0]:
            self._cache.clear()
            self._cache_version = _STRUCTURE_VERSION[0]
        try:
            return self._cache[key]
        except KeyError:
            value = self._cache[key] = build()
            return value

    def _entries(self) -> tuple[tuple[str, TensorSpec], ...]:
        """Top-level ``(key, spec)`` pairs, ``None`` entries left out."""
        return self._cached("entries", lambda: tuple((k, v) for k, v in self._specs.items() if v is not None))

    def _leaves(self) -> tuple[tuple[NestedKey, TensorSpec], ...]:
        """All non-Composite ``(nested key, spec)`` pairs, ``None`` entries left out."""
        return self._cached(
            "leaves", lambda: tuple((k, v) for k, v in self._walk(True, True) if v is not None)
        )

    def _walk(self, include_nested: bool, leaves_only: bool, is_leaf: Callable[[type], bool] | None = None):
        for key, spec in self._specs.items():
            nested = isinstance(spec, Composite)
            leaf = is_leaf(type(spec)) if is_leaf is not None else not nested
            if isinstance(spec, Composite) and include_nested:
                for sub_key, sub_spec in spec._walk(True, leaves_only, is_leaf):
                    yield (key, *sub_key) if isinstance(sub_key, tuple) else (key, sub_key), sub_spec
            if leaf or not leaves_only:
                yield key, spec

    # ------------------------------------------------------------------ mapping interface
    def keys(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
        step_mdp_static_only: bool = False,
    ) -> _CompositeKeysView:
        """Keys, optionally nested (tuples) and/or restricted to leaves (non-Composite entries)."""
        if is_leaf is None and not step_mdp_static_only:
            keys = self._cached(
                ("keys", include_nested, leaves_only),
                lambda: tuple(k for k, _ in self._walk(include_nested, leaves_only)),
            )
        else:
            keys = tuple(
                k
                for k, v in self._walk(include_nested, leaves_only, is_leaf)
                if not step_mdp_static_only or (isinstance(v, Composite) and v.step_mdp_static)
            )
        return _CompositeKeysView(keys)

    def items(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> tuple[tuple[NestedKey, TensorSpec | None], ...]:
        """``(key, spec)`` pairs, with the same options as :meth:`keys`."""
        if is_leaf is None:
            return self._cached(
                ("items", include_nested, leaves_only), lambda: tuple(self._walk(include_nested, leaves_only))
            )
        return tuple(self._walk(include_nested, leaves_only, is_leaf))

    def values(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> tuple[TensorSpec | None, ...]:
        """Specs, with the same options as :meth:`keys`."""
        return tuple(v for _, v in self.items(include_nested, leaves_only, is_leaf=is_leaf))

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, key: object) -> bool:
        try:
            key = _norm_key(key)
        except TypeError:
            return False
        if isinstance(key, str):
            return key in self._specs
        node: Any = self
        for part in key:
            if not isinstance(node, Composite) or part not in node._specs:
                return False
            node = node._specs[part]
        return True

    def get(self, key: NestedKey, default: Any = _NO_DEFAULT) -> Any:
        """The entry at ``key`` (nested keys allowed); ``default`` or a ``KeyError`` when missing."""
        key = _norm_key(key)
        parts = (key,) if isinstance(key, str) else key
        node: Any = self
        for i, part in enumerate(parts):
            if not isinstance(node, Composite) or part not in node._specs:
                if default is not _NO_DEFAULT:
                    return default
                where = parts[:i] if i else "the root"
                available = sorted(node._specs) if isinstance(node, Composite) else []
                raise KeyError(
                    f"Key {key!r} not found in Composite: no {part!r} under {where}; keys there: {available}."
                )
            node = node._specs[part]
        return node

    def set(self, name: NestedKey, spec: TensorSpec | Mapping | None) -> Composite:
        """Sets the entry at ``name``, creating intermediate sub-Composites for nested keys."""
        self._check_unlocked()
        key = _norm_key(name)
        if isinstance(key, tuple):
            head = key[0]
            sub = self._specs.get(head)
            if sub is None:
                sub = Composite(shape=self._shape, device=self._device)
                self._specs[head] = sub
            elif not isinstance(sub, Composite):
                raise KeyError(f"Cannot set {key!r}: {head!r} holds a {type(sub).__name__}, not a Composite.")
            sub.set(key[1:] if len(key) > 2 else key[1], spec)
            _bump()
            return self
        if key in _RESERVED_KEYS:
            raise AttributeError(
                f"Composite[{key}] cannot be set: {key!r} is a Composite attribute, not an entry name."
            )
        self._specs[key] = self._validate(key, spec)
        _bump()
        return self

    def _validate(self, key: str, spec: Any) -> TensorSpec | None:
        if spec is None:
            return None
        if isinstance(spec, Mapping) and not isinstance(spec, TensorSpec):
            spec = Composite(spec, shape=self._shape, device=self._device)
        if not isinstance(spec, TensorSpec):
            raise TypeError(f"Composite entry {key!r} must be a TensorSpec, got {type(spec).__name__}.")
        nd = len(self._shape)
        if spec.shape[:nd] != self._shape:
            raise ValueError(
                f"The shape of entry {key!r} ({type(spec).__name__}, shape {tuple(spec.shape)}) must start with "
                f"the Composite's shape {tuple(self._shape)}."
            )
        if self._device is not None and spec.device != self._device:
            if spec.device is None and isinstance(spec, Composite):
                spec = spec.to(self._device)
            else:
                raise RuntimeError(
                    f"Entry {key!r} ({type(spec).__name__}) is on {spec.device} but the Composite is on "
                    f"{self._device}; move it with .to({str(self._device)!r}) first."
                )
        return spec

    def __getitem__(self, idx: Any) -> Any:
        """``spec["a"]``/``spec["a", "b"]`` read entries; any other index slices the batch dims."""
        if _is_string_key(idx):
            return self.get(idx)
        nd = len(self._shape)
        idx = _expand_ellipsis(idx, nd)
        new_shape = _indexed_shape(self._shape, idx)
        return self._map(lambda s: s[idx], new_shape)

    def __setitem__(self, key: NestedKey, value: TensorSpec | Mapping | None) -> None:
        if not _is_string_key(key):
            raise TypeError(f"Composite entries are set by string keys, got {key!r}.")
        self.set(key, value)

    def __delitem__(self, key: NestedKey) -> None:
        self._check_unlocked()
        key = _norm_key(key)
        if isinstance(key, tuple):
            parent = self.get(key[:-1] if len(key) > 2 else key[0])
            if not isinstance(parent, Composite):
                raise KeyError(f"Cannot delete {key!r}: {key[:-1]!r} is not a Composite.")
            del parent[key[-1]]
        else:
            if key not in self._specs:
                raise KeyError(f"Key {key!r} not found in Composite; keys: {sorted(self._specs)}.")
            del self._specs[key]
        _bump()

    def pop(self, key: NestedKey, default: Any = _NO_DEFAULT) -> Any:
        """Removes and returns the entry at ``key`` (``default`` when missing, if given)."""
        if key not in self:
            if default is not _NO_DEFAULT:
                return default
            self.get(key)  # raises the descriptive KeyError
        value = self.get(key)
        del self[key]
        return value

    def update(self, dict_or_spec: Composite | Mapping[NestedKey, Any]) -> Composite:
        """Sets every entry of ``dict_or_spec``, merging nested Composites into existing ones."""
        items = dict_or_spec._specs.items() if isinstance(dict_or_spec, Composite) else dict_or_spec.items()
        for key, value in items:
            current = self.get(key, None)
            if isinstance(current, Composite) and isinstance(value, Composite) and current is not value:
                current.update(value)
            else:
                self.set(key, value)
        return self

    def select(self, *keys: NestedKey, strict: bool = True) -> Composite:
        """A new Composite with only ``keys`` (nested keys allowed)."""
        out = self.empty()
        for key in keys:
            if key not in self:
                if strict:
                    self.get(key)
                continue
            out.set(key, self.get(key))
        return out

    def exclude(self, *keys: NestedKey) -> Composite:
        """A new Composite without ``keys`` (nested keys allowed)."""
        out = self.clone()
        for key in keys:
            if key in out:
                del out[key]
        return out

    def empty(self) -> Composite:
        """A Composite with the same shape and device but no entries."""
        return Composite(
            shape=self._shape,
            device=self._device,
            data_cls=self.data_cls,
            step_mdp_static=self.step_mdp_static,
        )

    def is_empty(self, recurse: bool = False) -> bool:
        """Whether there are no entries (with ``recurse``, no leaves in any nested Composite)."""
        if not recurse:
            return not self._specs
        return all(
            isinstance(s, Composite) and s.is_empty(True) for s in self._specs.values() if s is not None
        )

    # ------------------------------------------------------------------ values
    def _build(self, method: str, shape: SHAPE_TYPING) -> TensorDictBase:
        src: dict[Any, Any] = {key: getattr(spec, method)(shape) for key, spec in self._entries()}
        return self._as_data(src, self._full_shape(shape), self._device)

    def _as_data(
        self, src: dict[Any, Any], batch_size: torch.Size, device: torch.device | None
    ) -> TensorDictBase:
        """``src`` as a TensorDict, or as ``data_cls`` (a TensorDict subclass or a tensorclass) when set."""
        cls = self.data_cls
        if cls is None:
            return TensorDict._new_unsafe(src, batch_size=batch_size, device=device)
        if is_tensorclass(cls):
            return cls(**src, batch_size=batch_size, device=device)
        return cls(src, batch_size=batch_size, device=device)

    def rand(self, shape: SHAPE_TYPING = None) -> TensorDictBase:
        """A TensorDict of random values, batch size ``(*shape, *self.shape)``."""
        return self._build("rand", shape)

    def zero(self, shape: SHAPE_TYPING = None) -> TensorDictBase:
        """A TensorDict of zeros, batch size ``(*shape, *self.shape)``."""
        return self._build("zero", shape)

    def one(self, shape: SHAPE_TYPING = None) -> TensorDictBase:
        """A TensorDict of ones, batch size ``(*shape, *self.shape)``."""
        return self._build("one", shape)

    def _mismatch(self, val: Any) -> str | None:
        if not isinstance(val, (TensorDictBase, Mapping)):
            return f"expected a TensorDict, got {type(val).__name__}"
        for key, spec in self._leaves():
            item = val.get(key, _NO_DEFAULT) if isinstance(val, TensorDictBase) else _dict_get(val, key)
            if item is _NO_DEFAULT:
                return f"key {key!r}: missing"
            reason = spec._mismatch(item)
            if reason is not None:
                return f"key {key!r} ({type(spec).__name__}): {reason}"
        return None

    def is_in(self, val: Any) -> bool:
        """Whether every leaf of the spec is present in ``val`` and in its spec (extra keys are ignored)."""
        if type(val) is TensorDict:
            # Plain TensorDicts: read their storage dict level by level (no key parsing per leaf).
            store = val._tensordict
            for key, spec in self._entries():
                item = store.get(key, _NO_DEFAULT)
                if item is _NO_DEFAULT or not spec.is_in(item):
                    return False
            return True
        if isinstance(val, TensorDictBase):
            for path, leaf in self._leaves():
                item = val.get(path, _NO_DEFAULT)
                if item is _NO_DEFAULT or not leaf.is_in(item):
                    return False
            return True
        return self._mismatch(val) is None

    def assert_is_in(self, value: Any) -> None:
        """Raises an ``AssertionError`` naming the first leaf (nested key) that is missing or out of spec."""
        reason = self._mismatch(value)
        if reason is not None:
            raise AssertionError(f"Value not in Composite spec: {reason}.")

    def type_check(self, value: Any, selected_keys: NestedKey | list[NestedKey] | None = None) -> None:
        """Checks leaf dtypes, raising a ``TypeError`` naming the key; tensors need ``selected_keys``."""
        if isinstance(value, torch.Tensor):
            if selected_keys is not None and _is_string_key(selected_keys):
                self.get(selected_keys).type_check(value, selected_keys)
                return
            raise TypeError(
                "Composite.type_check of a tensor needs the key it belongs to as `selected_keys`."
            )
        keys: list[Any] = (
            [k for k, _ in self._leaves()]
            if selected_keys is None
            else ([selected_keys] if _is_string_key(selected_keys) else list(selected_keys))
        )
        for key in keys:
            spec, item = self.get(key), value.get(key, None)
            if item is not None:
                spec.type_check(item, key)

    def project(self, val: TensorDictBase) -> TensorDictBase:  # type: ignore[override]  # TorchRL's spec API: Composite reads TensorDicts where leaf specs read tensors
        """Projects every out-of-spec leaf of ``val`` into its spec, in place (as TorchRL); returns ``val``."""
        for key, spec in self._leaves():
            item = val.get(key, None)
            if item is not None and not spec.is_in(item):
                val.set(key, spec.project(item))
        return val

    def encode(self, vals: Mapping | TensorDictBase, *, ignore_device: bool = False) -> TensorDictBase:
        """Encodes a (nested) dict of raw values into a TensorDict following the spec."""
        src = {}
        plan = None
        if getattr(self, "_memoize", False):
            signature = tuple(vals.keys())
            plan = self._encode_plans.get(signature)
            if plan is None:
                plan = self._encode_plans[signature] = [self.get(key) for key in signature]
        for i, (key, item) in enumerate(vals.items()):
            spec = plan[i] if plan is not None else self.get(key)
            try:
                src[key] = spec.encode(item, ignore_device=ignore_device) if spec is not None else item
            except (RuntimeError, ValueError, TypeError) as err:
                raise type(err)(f"Composite.encode failed for key {key!r}: {err}") from err
        if self.data_cls is None:
            return TensorDict(src, batch_size=self._shape, device=None if ignore_device else self._device)
        return self._as_data(src, self._shape, None if ignore_device else self._device)

    def to_numpy(self, val: TensorDictBase, safe: bool | None = None) -> dict:  # type: ignore[override]  # TorchRL's spec API: Composite reads TensorDicts where leaf specs read tensors
        """A nested dict of numpy arrays, one per entry present in both the spec and ``val``."""
        return {k: s.to_numpy(val.get(k), safe) for k, s in self._entries() if val.get(k, None) is not None}

    def cardinality(self) -> int | float:
        """Product of the leaves' cardinalities."""
        return math.prod(spec.cardinality() for _, spec in self._leaves())

    def enumerate(self, use_mask: bool = False) -> TensorDictBase:
        """Every joint value of the (discrete) leaves, stacked along a new first dim."""
        leaves = self._leaves()
        values = [spec.enumerate(use_mask) for _, spec in leaves]
        grids = torch.cartesian_prod(*[torch.arange(v.shape[0]) for v in values]) if values else None
        if grids is not None and grids.ndim == 1:
            grids = grids.unsqueeze(-1)
        if grids is None:
            return TensorDict(batch_size=(1, *self._shape), device=self._device)
        out = TensorDict(batch_size=(grids.shape[0], *self._shape), device=self._device)
        for i, ((key, _), v) in enumerate(zip(leaves, values)):
            out.set(key, v[grids[:, i]])
        return out

    # ------------------------------------------------------------------ shape / device operations
    def _map(self, fn: Callable[[TensorSpec], TensorSpec], shape: torch.Size, **attrs: Any) -> Composite:
        out = Composite(
            shape=shape,
            device=attrs.get("device", self._device),
            data_cls=self.data_cls,
            step_mdp_static=self.step_mdp_static,
        )
        out._specs = {k: (fn(v) if v is not None else None) for k, v in self._specs.items()}
        if len(shape) == len(self._shape):  # same batch dims (clone, to, slicing): the names still apply
            out._names = self._names
        return out

    def expand(self, *shape: Any) -> Composite:
        """Prepends batch dims to the Composite and all its entries (``-1`` keeps a dim)."""
        new = _varargs_size(shape)
        nd = len(self._shape)
        tail = new[len(new) - nd :] if nd else torch.Size([])
        resolved = torch.Size(
            [*new[: len(new) - nd], *(s if t == -1 else t for s, t in zip(self._shape, tail))]
        )
        if len(new) < nd or any(s != t and s != 1 for s, t in zip(self._shape, resolved[len(new) - nd :])):
            raise ValueError(
                f"Composite.expand: the last {nd} dims of the expanded shape {tuple(new)} must match the "
                f"Composite shape {tuple(self._shape)}."
            )
        return self._map(lambda s: s.expand(*resolved, *s.shape[nd:]), resolved)

    def reshape(self, *shape: Any) -> Composite:
        """Reshapes the batch dims of the Composite and all its entries."""
        new = _reshaped(self._shape, _varargs_size(shape))
        nd = len(self._shape)
        return self._map(lambda s: s.reshape(*new, *s.shape[nd:]), new)

    def clone(self) -> Composite:
        """A deep copy (unlocked)."""
        return self._map(lambda s: s.clone(), self._shape)

    def to(self, dest: torch.dtype | DEVICE_TYPING) -> Composite:
        """The Composite on another device (or with every leaf cast to a dtype)."""
        if isinstance(dest, torch.dtype):
            return self._map(lambda s: s.to(dest), self._shape)
        device = _as_device(dest)
        if device is None or device == self._device:
            return self
        return self._map(lambda s: s.to(device), self._shape, device=device)

    def separates(self, *keys: NestedKey, default: Any = None) -> Composite:
        """Removes ``keys`` from this Composite and returns them in a new one (``default`` if missing)."""
        out = self.empty()
        for key in keys:
            value = self.pop(key, default)
            if value is not None:
                out.set(key, value)
        return out

    def clear_device_(self) -> Composite:
        """Sets the device to ``None`` (recursively), so entries may live on different devices."""
        self._device = None
        for spec in self._specs.values():
            if isinstance(spec, Composite):
                spec.clear_device_()
        return self

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        return (
            self._shape == other._shape
            and self._device == other._device
            and self._specs.keys() == other._specs.keys()
            and all(v == other._specs[k] for k, v in self._specs.items())
        )

    def __repr__(self) -> str:
        body = "".join(f"\n    {k}: " + repr(v).replace("\n", "\n    ") + "," for k, v in self._specs.items())
        return f"Composite({body}\n    device={self._device},\n    shape={self._shape})"
