"""Storages backed by a Python list: one entry per item, any Python object."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase, is_tensor_collection

from tdrl.data.replay_buffers.storages.base import Storage
from tdrl.data.replay_buffers.utils import build_tensordict, is_int, leaf_paths, stack_items

__all__ = ["LazyStackStorage", "ListStorage"]

_TD_TAG = "__tensordict__"


def _as_positions(cursor: Any, length: int = 0) -> list[int]:
    if isinstance(cursor, slice):
        start = 0 if cursor.start is None else cursor.start
        stop = start + length if cursor.stop is None else cursor.stop
        return list(range(start, stop, cursor.step or 1))
    if isinstance(cursor, torch.Tensor):
        return cursor.reshape(-1).tolist()
    if isinstance(cursor, range):
        return list(cursor)
    return [int(c) for c in cursor]


def _single_dim(index: tuple, name: str) -> Any:
    # Samplers may return per-dimension index tuples; a list storage has one dimension.
    if len(index) != 1:
        raise IndexError(f"{name} has one dimension; got an index tuple of length {len(index)}.")
    return index[0]


class _Row:
    """Item ``i`` of a batch written in one call, materialized (``chunk[i]``) only when read.

    Keeping a reference to the batch instead of unbinding it saves one TensorDict construction per
    item on ``extend``; the memory held is the same, since unbound items are views of the batch.
    """

    __slots__ = ("chunk", "i")

    def __init__(self, chunk: Any, i: int) -> None:
        self.chunk = chunk
        self.i = i

    def materialize(self) -> Any:
        return self.chunk[self.i]


def _gather(chunk: Any, idx: torch.Tensor) -> Any:
    if isinstance(chunk, torch.Tensor):
        return chunk.index_select(0, idx)
    paths = leaf_paths(chunk) if type(chunk) is TensorDict else None
    if not paths:
        return chunk[idx]
    leaves = [_leaf(chunk, p).index_select(0, idx) for p in paths]
    return build_tensordict(paths, leaves, torch.Size([idx.shape[0], *chunk.batch_size[1:]]))


def _gather_rows(rows: list[_Row]) -> Any:
    """Stacks ``rows`` with one gather per written batch (``None`` if the batches do not concatenate)."""
    groups: dict[int, tuple[Any, list[int], list[int]]] = {}
    for j, r in enumerate(rows):
        group = groups.get(id(r.chunk))
        if group is None:
            groups[id(r.chunk)] = group = (r.chunk, [], [])
        group[1].append(j)
        group[2].append(r.i)
    if len(groups) == 1:
        chunk, _, items = next(iter(groups.values()))
        return _gather(chunk, torch.tensor(items, dtype=torch.long))
    parts = [_gather(chunk, torch.tensor(items, dtype=torch.long)) for chunk, _, items in groups.values()]
    order = torch.tensor([j for _, where, _ in groups.values() for j in where], dtype=torch.long)
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.numel())
    try:
        merged = torch.cat(parts, 0)
    except (RuntimeError, KeyError, TypeError, ValueError):
        return None  # batches with different layouts: stack item by item
    return _gather(merged, inverse)


def _leaf(td: TensorDict, path: tuple[str, ...]) -> torch.Tensor:
    node: Any = td
    for key in path:
        node = node._tensordict[key]
    return node


class ListStorage(Storage):
    """A storage keeping each item as a separate Python object in a list.

    Any object can be stored. ``get`` with several indices returns a list; the replay buffer's default
    ``collate_fn`` for this storage stacks tensors / TensorDicts.

    Args:
        max_size: capacity; ``None`` means unbounded.

    Keyword Args:
        compilable: see :class:`Storage`.
        device: if given, tensors / TensorDicts are moved there when written.

    Examples:
        >>> storage = ListStorage(4)
        >>> storage.set(range(3), [torch.tensor(0), "one", {"two": 2}])
        >>> storage.get([2, 0])
        [{'two': 2}, tensor(0)]
    """

    def __init__(
        self,
        max_size: int | None = None,
        *,
        compilable: bool = False,
        device: torch.device | str | int | None = None,
    ) -> None:
        super().__init__(sys.maxsize if max_size is None else max_size, compilable=compilable)
        self.device = torch.device(device) if device is not None else None
        self._storage: list[Any] = []
        self._keys: frozenset | None = None

    def _to_device(self, item: Any) -> Any:
        if type(item) is _Row:
            return item
        if self.device is not None and (isinstance(item, torch.Tensor) or is_tensor_collection(item)):
            return item.to(self.device)
        return item

    def _check_keys(self, item: Any) -> None:
        # Stored TensorDicts must keep the same key set, so that sampled items can be stacked.
        if type(item) is _Row:
            item = item.chunk
        if not isinstance(item, TensorDictBase):
            return
        keys = frozenset(item.keys(include_nested=True, leaves_only=True))
        if self._keys is None or not self._storage:
            self._keys = keys
        elif keys != self._keys:
            raise KeyError(
                f"{type(self).__name__}: the data keys differ from the stored items' keys: "
                f"missing {sorted(map(str, self._keys - keys))}, unexpected {sorted(map(str, keys - self._keys))}."
            )

    def set(self, cursor: Any, data: Any, *, set_cursor: bool = True) -> None:
        items: Sequence[Any]
        if is_int(cursor):
            positions, items = [int(cursor)], [data]
        else:
            items = self._split_batch(data)
            positions = _as_positions(cursor, len(items))
            if len(positions) != len(items):
                raise ValueError(
                    f"{type(self).__name__}.set: got {len(positions)} indices for {len(items)} items."
                )
        if items:
            self._check_keys(data if isinstance(data, TensorDictBase) and not is_int(cursor) else items[0])
        bound = len(self._storage)
        if positions:
            lo, hi = min(positions), max(positions)
            if lo < 0 or hi >= self.max_size:
                raise IndexError(
                    f"{type(self).__name__}: write indices must lie in [0, {self.max_size}), got [{lo}, {hi}]."
                )
            if hi >= bound and not set(range(bound, hi + 1)) <= set(positions):
                raise IndexError(
                    f"{type(self).__name__}: writing up to index {hi} with only {bound} items stored would "
                    "leave holes (list storages are filled without gaps)."
                )
        if set_cursor:
            self._last_cursor = cursor
        self._write(positions, items)
        self._notify_write(cursor)

    def _write(self, positions: list[int], items: Sequence[Any]) -> None:
        store = self._storage
        if positions and max(positions) >= len(store):
            store.extend([None] * (max(positions) + 1 - len(store)))
        for pos, item in zip(positions, items):
            store[pos] = self._encode(self._to_device(item))

    def _split_batch(self, data: Any) -> Sequence[Any]:
        if isinstance(data, (TensorDictBase, torch.Tensor)):
            if self.device is not None and data.device != self.device:
                data = data.to(self.device)
            return [_Row(data, i) for i in range(data.shape[0])]
        return data

    def _encode(self, item: Any) -> Any:
        return item

    def _decode(self, item: Any) -> Any:
        return item.materialize() if type(item) is _Row else item

    def get_stacked(self, index: Any) -> Any:
        """``stack_items(self.get(index))``, gathering straight from the written batches when possible."""
        if isinstance(index, tuple):
            index = _single_dim(index, type(self).__name__)
        positions = _as_positions(index) if not isinstance(index, slice) else range(len(self))[index]
        store = self._storage
        try:
            rows = [store[i] for i in positions]
        except IndexError:
            return self.get(index)  # raises the informative error
        if rows and all(type(r) is _Row for r in rows):
            out = _gather_rows(rows)
            if out is not None:
                return out
        return stack_items([self._decode(r) for r in rows])

    def _check_index(self, pos: int) -> int:
        n = len(self._storage)
        if not -n <= pos < n:
            raise IndexError(f"{type(self).__name__}: index {pos} out of range for a storage of length {n}.")
        return pos

    def get(self, index: Any) -> Any:
        if isinstance(index, tuple):
            index = _single_dim(index, type(self).__name__)
        if is_int(index):
            return self._decode(self._storage[self._check_index(int(index))])
        if isinstance(index, slice):
            return [self._decode(x) for x in self._storage[index]]
        positions = _as_positions(index)
        store = self._storage
        n = len(store)
        try:
            return [self._decode(store[i]) for i in positions]
        except IndexError:
            bad = [i for i in positions if not -n <= i < n]
            raise IndexError(
                f"{type(self).__name__}: indices {bad[:5]} out of range for a storage of length {n}."
            ) from None

    def __len__(self) -> int:
        return len(self._storage)

    def _empty(self) -> None:
        self._storage = []
        self._keys = None

    def state_dict(self) -> dict[str, Any]:
        items = []
        for item in self._storage:
            item = self._decode(item)
            if isinstance(item, TensorDictBase):
                item = {_TD_TAG: item.to_dict(), "batch_size": list(item.batch_size)}
            items.append(item)
        return {"_storage": items}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        items = []
        for item in state_dict["_storage"]:
            if isinstance(item, dict) and _TD_TAG in item:
                item = TensorDict(item[_TD_TAG], batch_size=item["batch_size"])
            items.append(item)
        self._storage = items
        self._keys = None

    def contains(self, item: int) -> bool:
        """Whether index ``item`` holds data."""
        return -len(self) <= int(item) < len(self)


class LazyStackStorage(ListStorage):
    """A list storage whose multi-index reads return a :class:`~tensordict.LazyStackedTensorDict`.

    Items may have different shapes (heterogeneous trajectories); they are stacked lazily along
    ``stack_dim`` when read.

    Args:
        max_size: capacity; ``None`` means unbounded.

    Keyword Args:
        compilable: see :class:`Storage`.
        stack_dim: the dimension along which items are lazily stacked. Defaults to ``0``.
        device: if given, data are moved there when written.

    Examples:
        >>> storage = LazyStackStorage(10)
        >>> storage.set(range(2), [TensorDict(a=torch.zeros(3)), TensorDict(a=torch.zeros(5))])
        >>> type(storage.get([0, 1])).__name__
        'LazyStackedTensorDict'
    """

    def __init__(
        self,
        max_size: int | None = None,
        *,
        compilable: bool = False,
        stack_dim: int = 0,
        device: torch.device | str | int | None = None,
    ) -> None:
        super().__init__(max_size, compilable=compilable, device=device)
        self.stack_dim = stack_dim

    def _check_keys(self, item: Any) -> None:
        # Heterogeneous items are the point of this storage: no key-set check.
        return

    def get(self, index: Any) -> Any:
        out = super().get(index)
        if isinstance(out, list) and out and is_tensor_collection(out[0]):
            return LazyStackedTensorDict(*out, stack_dim=self.stack_dim)
        return out
