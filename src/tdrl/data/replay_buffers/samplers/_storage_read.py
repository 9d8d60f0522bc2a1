"""Reading one entry of a replay-buffer storage at a few positions, without materialising the rest.

Slice samplers need the trajectory ids / done flags of a handful of rows (the rows written since
the last sample, or the sampled rows); fetching ``storage[:]`` as TorchRL does would copy every
stored key. These helpers go straight to the stored entry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase, is_tensor_collection
from tensordict.utils import NestedKey

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["dim0_rows", "last_row", "read_entry", "read_written", "storage_keys"]


def storage_keys(storage: Storage) -> set | None:
    """The nested keys of the stored items, or ``None`` when they cannot be read cheaply.

    Examples:
        >>> from tensordict import TensorDict
        >>> class Fake:
        ...     _storage = TensorDict({"a": torch.zeros(3), ("b", "c"): torch.zeros(3)}, [3])
        >>> sorted(map(str, storage_keys(Fake())))
        ["('b', 'c')", 'a', 'b']
    """
    data = getattr(storage, "_storage", None)
    if isinstance(data, list):
        data = data[0] if data else None
        if data is not None and hasattr(storage, "_decode"):
            data = storage._decode(data)
    if data is not None and is_tensor_collection(data):
        return set(data.keys(include_nested=True))
    return None


def _gather_list(storage: Storage, key: NestedKey, index: tuple[torch.Tensor, ...]) -> torch.Tensor:
    if len(index) != 1:
        raise RuntimeError("list storages are 1-dimensional: got a multi-dimensional index.")
    items = storage.get(index[0].tolist())
    if is_tensor_collection(items):  # LazyStackStorage reads come back stacked already
        value = items.get(key, None)
        if value is None:
            raise KeyError(key)
        return value.cpu()
    if not items:
        return torch.zeros(0)
    if not all(is_tensor_collection(item) for item in items):
        raise RuntimeError(
            "slice samplers read trajectory keys from TensorDict items; this list storage holds "
            f"{type(items[0]).__name__} items."
        )
    values = [item.get(key, None) for item in items]
    if any(v is None for v in values):
        raise KeyError(key)
    return torch.stack(values).cpu()


def read_entry(storage: Storage, key: NestedKey, index: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The stored ``key`` at ``index`` (a tuple of one long tensor per storage dimension).

    Raises:
        KeyError: ``key`` is not stored.
        RuntimeError: the storage does not hold TensorDicts.

    The value comes back on CPU, where the samplers keep their bookkeeping, whatever the storage's device.

    Examples:
        >>> from tensordict import TensorDict
        >>> class Fake:
        ...     _storage = TensorDict({"traj": torch.arange(5) * 10}, [5])
        >>> read_entry(Fake(), "traj", (torch.tensor([4, 1]),))
        tensor([40, 10])
    """
    data = getattr(storage, "_storage", None)
    if isinstance(data, TensorDictBase):
        value = data.get(key, None)
        if value is None:
            raise KeyError(key)
        return value[index].cpu()
    if isinstance(data, list):
        return _gather_list(storage, key, index)
    if isinstance(data, torch.Tensor):
        raise RuntimeError(
            f"slice samplers need TensorDict data to read {key!r}; the storage holds a plain tensor."
        )
    out = storage.get(index if len(index) > 1 else index[0])
    if not is_tensor_collection(out):
        raise RuntimeError(
            f"slice samplers need TensorDict data to read {key!r}; the storage returned {type(out).__name__}."
        )
    value = out.get(key, None)
    if value is None:
        raise KeyError(key)
    return value.cpu()


def read_written(storage: Storage, key: NestedKey) -> torch.Tensor:
    """The stored ``key`` of every written item, shaped ``[rows written along dim 0, *other storage dims]``.

    A TensorDict-backed storage is read as one slice (no gather of an index built over every row).

    Examples:
        >>> from tensordict import TensorDict
        >>> class Fake:  # 3 of 5 rows written
        ...     ndim = 1
        ...     _storage = TensorDict({"v": torch.arange(5)}, [5])
        ...     def __len__(self):
        ...         return 3
        >>> read_written(Fake(), "v")
        tensor([0, 1, 2])
    """
    rows = storage._len_along_dim0 if storage.ndim > 1 else len(storage)
    data = getattr(storage, "_storage", None)
    if isinstance(data, TensorDictBase):
        value = data.get(key, None)
        if value is None:
            raise KeyError(key)
        return value[:rows].cpu()
    dims = (torch.arange(d) for d in (rows, *storage.shape[1:]))
    index = tuple(m.reshape(-1) for m in torch.meshgrid(*dims, indexing="ij"))
    return read_entry(storage, key, index).reshape(rows, *storage.shape[1:])


def dim0_rows(index: Any, storage: Storage | None = None) -> torch.Tensor | None:
    """Positions along storage dim 0 touched by a write at ``index``, or ``None`` if unknown.

    Accepts what writers report: an int, a list / 1-D tensor of ints, a ``[N, ndim]`` tensor, a
    tuple of per-dimension tensors, a ``range`` or a ``slice`` (which needs ``storage``).

    Examples:
        >>> dim0_rows(torch.tensor([[3, 0], [3, 1], [4, 0]]))
        tensor([3, 3, 4])
        >>> dim0_rows(7), dim0_rows([1, 2])
        (tensor([7]), tensor([1, 2]))
    """
    if isinstance(index, slice):
        if storage is None:
            return None
        return torch.arange(*index.indices(storage._max_size_along_dim0()))
    if isinstance(index, tuple):
        return torch.as_tensor(index[0], dtype=torch.long).reshape(-1) if index else None
    if isinstance(index, range):
        return torch.as_tensor(list(index), dtype=torch.long)
    try:
        rows = torch.as_tensor(index, dtype=torch.long)
    except (TypeError, ValueError, RuntimeError):
        return None
    if rows.ndim >= 2:
        rows = rows[..., 0]
    return rows.reshape(-1)


def last_row(cursor: Any, storage: Storage | None = None) -> int | None:
    """The last dim-0 row of a write cursor, in O(1) for slices and ranges.

    Examples:
        >>> last_row(range(3, 8)), last_row(torch.tensor([[4, 0], [5, 1]])), last_row([2, 6])
        (7, 5, 6)
    """
    if cursor is None:
        return None
    if isinstance(cursor, slice):
        if storage is None:
            return None
        span = range(*cursor.indices(storage._max_size_along_dim0()))
        return span[-1] if len(span) else None
    if isinstance(cursor, range):
        return cursor[-1] if len(cursor) else None
    if isinstance(cursor, tuple):
        cursor = cursor[0] if cursor else None
    if isinstance(cursor, (list, tuple)):
        cursor = cursor[-1] if cursor else None
    if isinstance(cursor, torch.Tensor):
        if not cursor.numel():
            return None
        cursor = cursor[-1] if cursor.ndim <= 1 else cursor[-1].reshape(-1)[0]
    try:
        return int(cursor)
    except (TypeError, ValueError):
        return None
