"""Storages holding items in preallocated tensors (or TensorDicts of tensors)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data.replay_buffers.storages._dump import dump_tensor_storage, filled_nbytes, read_tensor_storage
from tdrl.data.replay_buffers.storages._layout import LeafLayout, data_leaves
from tdrl.data.replay_buffers.storages._objects import ObjectColumns, split_non_tensor
from tdrl.data.replay_buffers.storages._trees import TreeCodec, is_tree
from tdrl.data.replay_buffers.storages.base import Storage
from tdrl.data.replay_buffers.utils import applied, is_int

__all__ = ["LazyTensorStorage", "TensorStorage"]

_TENSOR_KEY = "_tensor"


def _is_compiling() -> bool:
    return torch.compiler.is_compiling()


class TensorStorage(Storage):
    """A storage backed by a tensor or a TensorDict whose first dimension(s) index the items.

    Reads with a 1-D index tensor gather each leaf with one ``index_select`` into a fresh output;
    writes copy each leaf with one ``index_copy_``. Non-tensor leaves (strings, Python objects) are
    kept beside the tensors, one value per item (see ``_objects.py``). Data written must match the
    stored keys, shapes and dtypes, else a ``KeyError`` / ``ValueError`` / ``TypeError`` names the
    offending key and nothing is written.

    ``@tensorclass`` instances and pytrees (nested dicts / lists / tuples of tensors) are stored too:
    reads give back the tensorclass, or a pytree of the written structure whose leaves gain the index's
    leading dims. The first write fixes the class or structure.

    Args:
        storage: the preallocated tensor / TensorDict (its first dim is the capacity), or ``None``
            for lazily-allocating subclasses.
        max_size: the capacity; must match ``storage.shape[0]`` when both are given.

    Keyword Args:
        device: where the data live. Defaults to ``"cpu"``.
        ndim: how many leading dimensions of the storage index items (``2`` for ``[time, env]``
            storages fed with ``[env, time]`` batches). Defaults to ``1``.
        compilable: see :class:`Storage`.

    Examples:
        >>> storage = TensorStorage(TensorDict(obs=torch.zeros(5, 2), batch_size=[5]))
        >>> storage.set(torch.tensor([1, 3]), TensorDict(obs=torch.ones(2, 2), batch_size=[2]))
        >>> storage.get(torch.tensor([3, 0]))["obs"]
        tensor([[1., 1.],
                [0., 0.]])
        >>> tree = TensorStorage({"obs": torch.zeros(4, 2), "act": (torch.arange(4),)})
        >>> tree.get(torch.tensor([2, 3]))["act"]
        (tensor([2, 3]),)
    """

    def __init__(
        self,
        storage: torch.Tensor | TensorDictBase | None,
        max_size: int | None = None,
        *,
        device: torch.device | str = "cpu",
        ndim: int = 1,
        compilable: bool = False,
    ) -> None:
        codec = None
        if storage is None:
            if max_size is None:
                raise ValueError("TensorStorage needs a storage tensor/TensorDict or a max_size.")
        else:
            if is_tree(storage):
                codec = TreeCodec(storage, type(self).__name__)
                storage = codec.encode(storage, ndim)
            if not isinstance(storage, (torch.Tensor, TensorDictBase)):
                raise TypeError(
                    f"TensorStorage expects a tensor, a TensorDict, a tensorclass or a pytree of tensors, "
                    f"got {type(storage).__name__}."
                )
            if max_size is not None and int(max_size) != storage.shape[0]:
                raise ValueError(
                    f"max_size={max_size} does not match the storage's first dimension {storage.shape[0]}."
                )
            max_size = math.prod(storage.shape[:ndim])
        super().__init__(max_size, compilable=compilable)
        self._codec: TreeCodec | None = codec
        self.ndim = int(ndim)
        if device == "auto":
            device = storage.device if storage is not None and storage.device is not None else "auto"
        self.device: torch.device | str = torch.device(device) if device != "auto" else "auto"
        self._storage: torch.Tensor | TensorDictBase | None = None
        self._layout: LeafLayout | None = None
        self._objects: ObjectColumns | None = None
        self._len = 0
        self._shared = False
        objects: dict = {}
        if storage is not None:
            storage, objects = split_non_tensor(storage)
        self._storage = storage
        if storage is not None:
            self._layout = LeafLayout(storage, self.ndim)
            self._len = self.max_size
            if objects:
                self._objects = self._new_objects(list(objects))
                self._objects.write(self._objects.cell_ids(slice(None)), objects)

    # ---- sizes ---------------------------------------------------------------------------------
    @property
    def initialized(self) -> bool:
        """Whether the storage tensors are allocated."""
        return self._storage is not None

    def __len__(self) -> int:
        return self._len

    @property
    def _total_shape(self) -> torch.Size | None:
        return None if self._layout is None else self._layout.storage_shape

    @property
    def _cells_per_row(self) -> int:
        return 1 if self._layout is None else self._layout.cells_n // self._layout.rows_n

    @property
    def _len_along_dim0(self) -> int:
        per_row = self._cells_per_row
        return -(-self._len // per_row)

    def _max_size_along_dim0(self, *, single_data: Any = None, batched_data: Any = None) -> int:
        if self.ndim == 1:
            return self.max_size
        if self._layout is not None:
            return self._layout.rows_n
        data = single_data if single_data is not None else batched_data
        if data is None:
            raise ValueError("single_data or batched_data is needed to size an uninitialized storage.")
        shape = data.shape if isinstance(data, torch.Tensor) else data.batch_size
        inner = shape[1 : self.ndim] if batched_data is not None else shape[: self.ndim - 1]
        return -(-self.max_size // max(1, math.prod(inner)))

    @property
    def shape(self) -> torch.Size | None:  # type: ignore[override]  # None before the first write (TorchRL's too)
        total = self._total_shape
        if total is None:
            return None
        if self._len >= self.max_size:
            return total
        return torch.Size([self._len_along_dim0, *total[1:]])

    @property
    def _is_full(self) -> bool:
        return self._len >= self.max_size

    def _rand_given_ndim(self, batch_size: int) -> torch.Tensor | tuple[torch.Tensor, ...]:
        device = self._rand_device
        if self.ndim == 1:
            return torch.randint(0, self._len, (batch_size,), generator=self._rng, device=device)
        return tuple(
            torch.randint(0, d, (batch_size,), generator=self._rng, device=device) for d in self.shape or ()
        )

    # ---- allocation ----------------------------------------------------------------------------
    def _init(self, item: torch.Tensor | TensorDictBase) -> None:
        raise RuntimeError(f"{type(self).__name__} must be given its storage at construction.")

    def _allocated(self, storage: torch.Tensor | TensorDictBase, object_paths: list | None = None) -> None:
        if self._shared:
            storage.share_memory_()
        self._storage = storage
        self._layout = LeafLayout(storage, self.ndim)
        self._objects = self._new_objects(object_paths) if object_paths else None

    def _new_objects(self, paths: list) -> ObjectColumns:
        layout = self._ready_layout()
        return ObjectColumns(paths, layout.storage_shape, layout.inner_batch or torch.Size([]))

    def _split_objects(self, data: Any, cursor: Any) -> tuple[Any, dict, torch.Tensor | None]:
        """``data`` without its non-tensor leaves, the leaves, and the cells they go to (checked)."""
        data, objects = split_non_tensor(data)
        cols = self._objects
        if cols is None:
            if objects:
                raise KeyError(
                    f"{type(self).__name__}: the data has non-tensor keys {sorted(objects)} the storage was "
                    "not created with."
                )
            return data, objects, None
        cols.check_keys(objects, type(self).__name__)
        cells = cols.cell_ids(cursor)
        cols.check_write(cells, objects)
        return data, objects, cells

    def _with_objects(self, out: Any, index: Any, *, rows: int | None = None, cells: bool = False) -> Any:
        if self._objects is None:
            return out
        ids = index if cells else self._objects.cell_ids(index, rows)
        return self._objects.attach(out, ids)

    # ---- writes --------------------------------------------------------------------------------
    def _encode_tree(self, data: Any, *, batched: bool) -> Any:
        """``data`` as stored: a tensorclass or pytree becomes its TensorDict (anything else is returned as is)."""
        codec = self._codec
        if codec is None:
            if self._storage is not None or not is_tree(data) or isinstance(data, list) and not data:
                return data
            codec = self._codec = TreeCodec(data, type(self).__name__)
        return codec.encode(data, int(batched) + self.ndim - 1)

    def _ready_layout(self) -> LeafLayout:
        layout = self._layout
        if layout is None:
            raise RuntimeError(f"{type(self).__name__}: the storage is not allocated yet (nothing was written).")
        return layout

    def _validate(self, data: Any, lead: int) -> list[torch.Tensor]:
        layout = self._ready_layout()
        if isinstance(data, torch.Tensor) != layout.is_tensor:
            kind = "a tensor" if layout.is_tensor else "a TensorDict"
            raise TypeError(f"{type(self).__name__} holds {kind}; cannot write a {type(data).__name__}.")
        if not isinstance(data, (torch.Tensor, TensorDictBase)):
            raise TypeError(f"{type(self).__name__} accepts tensors or TensorDicts, got {type(data).__name__}.")
        paths, leaves = data_leaves(data, layout.paths)
        if paths != layout.paths:
            have, want = set(paths or ()), set(layout.paths or ())
            raise KeyError(
                f"{type(self).__name__}: the data keys do not match the storage keys: "
                f"missing {sorted(want - have)}, unexpected {sorted(have - want)}."
            )
        for i, leaf in enumerate(leaves):
            name = "data" if paths is None else f"key {paths[i] if len(paths[i]) > 1 else paths[i][0]!r}"
            if not isinstance(leaf, torch.Tensor):
                raise TypeError(f"{type(self).__name__}: {name} is a {type(leaf).__name__}, expected a tensor.")
            if leaf.shape[lead:] != layout.row_shapes[i]:
                raise ValueError(
                    f"{type(self).__name__}: {name} has shape {tuple(leaf.shape)}; expected "
                    f"{'[N, ' if lead else '['}{', '.join(map(str, layout.row_shapes[i]))}] "
                    f"(item shape {tuple(layout.row_shapes[i])})."
                )
            if leaf.dtype != layout.dtypes[i]:
                raise TypeError(
                    f"{type(self).__name__}: {name} has dtype {leaf.dtype}, the storage holds {layout.dtypes[i]}."
                )
        if lead and len({leaf.shape[0] for leaf in leaves}) > 1:
            raise ValueError(f"{type(self).__name__}: data leaves disagree on the batch size.")
        return leaves

    def _normalize_cursor(self, cursor: Any) -> tuple[Any, int | None]:
        if is_int(cursor):
            return int(cursor), None
        if isinstance(cursor, slice):
            return cursor, len(range(*cursor.indices(self._ready_layout().rows_n)))
        if isinstance(cursor, range):
            cursor = torch.arange(cursor.start, cursor.stop, cursor.step)
        elif not isinstance(cursor, torch.Tensor):
            cursor = torch.as_tensor(cursor, dtype=torch.long)
        if cursor.dtype != torch.long:
            cursor = cursor.long()
        cursor = cursor.reshape(-1)
        device = self._ready_layout().device
        if cursor.device != device:
            cursor = cursor.to(device)
        return cursor, cursor.shape[0]

    def set(self, cursor: Any, data: Any, *, set_cursor: bool = True) -> None:
        if isinstance(cursor, tuple):
            return self._set_multi(cursor, data, set_cursor=set_cursor)
        data = self._encode_tree(data, batched=not is_int(cursor))
        if self._storage is None:
            self._init(data if is_int(cursor) else data[0])
        cursor, n = self._normalize_cursor(cursor)
        data, objects, cells = self._split_objects(data, cursor)
        leaves = self._validate(data, 0 if n is None else 1)
        layout, storage = self._ready_layout(), self._storage
        if n is not None and leaves[0].shape[0] != n:
            raise ValueError(f"{type(self).__name__}.set: {n} indices for {leaves[0].shape[0]} items.")
        if n is None and not -layout.rows_n <= cursor < layout.rows_n:
            raise IndexError(f"{type(self).__name__}: index {cursor} out of range for {layout.rows_n} rows.")
        if isinstance(cursor, torch.Tensor) and n and not _is_compiling():
            hi, lo = int(cursor.max()), int(cursor.min())
            if hi >= layout.rows_n or lo < 0:
                raise IndexError(
                    f"{type(self).__name__}: write indices must lie in [0, {layout.rows_n}), got [{lo}, {hi}]."
                )
        if layout.fast:
            layout.write_rows(cursor, leaves, n)
        elif storage is not None:  # allocated with the layout
            storage[cursor] = data
        if cells is not None and self._objects is not None:
            self._objects.write(cells, objects)
        if set_cursor:
            self._last_cursor = cursor
            self._len = min(self._len + (1 if n is None else n) * self._cells_per_row, self.max_size)
        if self._attached_entities_list:
            self._notify_write(cursor)

    def _set_multi(self, cursor: tuple, data: Any, *, set_cursor: bool) -> None:
        if self._storage is None:
            raise RuntimeError(f"{type(self).__name__}: a tuple index needs an initialized storage.")
        data = self._encode_tree(data, batched=True)
        data, objects, cells = self._split_objects(data, cursor)
        self._storage[cursor] = data
        if cells is not None and self._objects is not None:
            self._objects.write(cells, objects)
        if set_cursor:
            self._last_cursor = cursor
            n = torch.broadcast_shapes(*(torch.as_tensor(c).shape for c in cursor)).numel()
            self._len = min(self._len + n, self.max_size)
        self._notify_write(cursor)

    # ---- reads ---------------------------------------------------------------------------------
    def _checked(self, idx: torch.Tensor, bound: int, dim: int = 0) -> torch.Tensor:
        if idx.numel() == 0 or self._compilable or _is_compiling():
            return idx
        lo, hi = torch.stack(torch.aminmax(idx)).tolist()  # one reduction, one host sync
        if hi >= bound or lo < -bound:
            raise IndexError(
                f"{type(self).__name__}: index out of range along storage dim {dim}: got values in "
                f"[{lo}, {hi}] for a filled size of {bound}."
            )
        return idx + bound * (idx < 0) if lo < 0 else idx

    def get(self, index: Any) -> Any:
        out = self._get(index, checked=True)
        return out if self._codec is None else self._codec.decode(out)

    def _get_sampled(self, index: Any) -> Any:
        # Indices drawn by a sampler from this storage: no host-synchronizing bounds check
        # (index_select still refuses indices beyond the allocation).
        out = self._get(index, checked=False)
        return out if self._codec is None else self._codec.decode(out)

    def _get(self, index: Any, *, checked: bool) -> Any:
        layout = self._layout
        if layout is None:
            raise RuntimeError(f"Cannot read from an empty {type(self).__name__}: nothing was written yet.")
        if layout.fast:
            if type(index) is torch.Tensor and index.ndim == 1:
                if index.dtype is not torch.long:
                    if index.dtype is torch.bool:
                        index = index.nonzero().squeeze(-1)
                    elif index.is_floating_point():
                        raise IndexError(f"{type(self).__name__}: float indices are not allowed ({index.dtype}).")
                    else:
                        index = index.long()
                if index.device != layout.device:
                    index = index.to(layout.device)
                if checked:
                    index = self._checked(index, self._len_along_dim0)
                return self._with_objects(layout.gather_rows(index), index)
            if isinstance(index, tuple) and len(index) == self.ndim and all(
                isinstance(i, torch.Tensor) and i.ndim == 1 for i in index
            ):
                shape = self.shape or layout.storage_shape
                index = tuple(i.to(layout.device).long() for i in index)
                if checked:
                    index = tuple(self._checked(i, shape[d], d) for d, i in enumerate(index))
                flat = layout.flat_index(index)
                return self._with_objects(layout.gather_cells(flat), flat, cells=True)
        if is_int(index):
            n = self._len_along_dim0
            if not -n <= int(index) < n:
                raise IndexError(f"{type(self).__name__}: index {int(index)} out of range for length {n}.")
        storage = self._storage
        if storage is None:
            raise RuntimeError(f"Cannot read from an empty {type(self).__name__}: nothing was written yet.")
        rows = None if self._is_full else self._len_along_dim0
        return self._with_objects((storage if rows is None else storage[:rows])[index], index, rows=rows)

    # ---- state ---------------------------------------------------------------------------------
    def _empty(self) -> None:
        self._len = 0
        self._last_cursor = None

    def _as_td(self) -> TensorDictBase:
        storage = self._storage
        if storage is None:
            raise RuntimeError(f"{type(self).__name__}: the storage is not allocated yet (nothing was written).")
        if isinstance(storage, torch.Tensor):
            return TensorDict({_TENSOR_KEY: storage}, batch_size=storage.shape[: self.ndim])
        return storage

    def state_dict(self) -> dict[str, Any]:
        """The filled rows (not the whole capacity), the capacity and the length, as tensors and plain values."""
        if self._storage is None:
            return {"_storage": None, "initialized": False, "_len": 0}
        td, capacity = self._as_td(), self._ready_layout().rows_n
        rows = capacity if self._is_full else self._len_along_dim0
        if rows < capacity:
            td = td[:rows].clone()  # a copy: torch.save of a view would write the whole underlying storage
        return {
            "_storage": {"data": td.to_dict(), "batch_size": list(td.batch_size)},
            "is_tensor": isinstance(self._storage, torch.Tensor),
            "initialized": True,
            "_len": self._len,
            "capacity_rows": capacity,
            "max_size": self.max_size,
            "_objects": self._objects_state(rows),
            "_tree": None if self._codec is None else self._codec.state(),
        }

    def _objects_state(self, rows: int) -> dict[str, list[Any]] | None:
        if self._objects is None:
            return None
        return self._objects.state(rows * self._cells_per_row)

    def _restore_objects(self, state: dict[str, list[Any]] | None) -> None:
        """Restores non-tensor columns saved by :meth:`state_dict` / ``dumps`` (``None``: there were none)."""
        if not state:
            self._objects = None
            return
        if self._objects is None or set(self._objects.state(0)) != set(state):
            self._objects = self._new_objects([tuple(k.split("/")) for k in sorted(state)])
        self._objects.load_state(state)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not state_dict.get("initialized", False):
            self._empty()
            return
        payload = state_dict["_storage"]
        tree = state_dict.get("_tree")
        self._codec = None if tree is None else TreeCodec.from_state(tree, type(self).__name__)
        td = TensorDict(payload["data"], batch_size=payload["batch_size"])
        is_tensor = bool(state_dict.get("is_tensor"))
        if "capacity_rows" not in state_dict:  # written before filled-rows states: the whole capacity
            self._load_content(td, is_tensor, int(state_dict["_len"]))
            return
        self._load_rows(td.get(_TENSOR_KEY) if is_tensor else td, capacity_rows=int(state_dict["capacity_rows"]),
                        length=int(state_dict["_len"]), max_size=int(state_dict["max_size"]))
        self._restore_objects(state_dict.get("_objects"))

    def _load_content(self, td: TensorDictBase, is_tensor: bool, length: int) -> None:
        data = td.get(_TENSOR_KEY) if is_tensor else td
        storage = self._storage
        if storage is None:
            self._adopt(data)
        else:
            shape = self._ready_layout().storage_shape
            if shape != data.shape[: self.ndim]:
                raise ValueError(
                    f"{type(self).__name__}: checkpoint storage shape {tuple(data.shape[: self.ndim])} does not "
                    f"match this storage's {tuple(shape)}."
                )
            self._validate(data, 1)
            if isinstance(storage, torch.Tensor):
                storage.copy_(data)
            else:
                storage.update_(data)
        self._len = length

    def _adopt(self, data: torch.Tensor | TensorDictBase) -> None:
        self.max_size = math.prod(data.shape[: self.ndim])
        self._allocated(data.clone() if isinstance(data, torch.Tensor) else data.clone())

    def _dump_nbytes(self) -> int:
        return filled_nbytes(self)

    def _dump_into(self, directory: Path, *, allow_pickle_unsafe: bool = False) -> None:
        # Tensors only: allow_pickle_unsafe has nothing to pickle here.
        dump_tensor_storage(self, directory)

    def _load_from(self, directory: Path, *, allow_pickle_unsafe: bool = False) -> None:
        content = read_tensor_storage(directory, allow_pickle_unsafe=allow_pickle_unsafe)
        if not content["initialized"]:
            self._empty()
            return
        tree = content.get("tree")
        self._codec = None if tree is None else TreeCodec.from_state(tree, type(self).__name__)
        if content["capacity_rows"] is None:  # format 1: the whole capacity was written
            self._load_content(content["data"], content["is_tensor"], content["_len"])
        else:
            self._load_rows(content["data"], capacity_rows=content["capacity_rows"], length=content["_len"],
                            max_size=content["max_size"])
            self._restore_objects(content.get("objects"))

    def _load_rows(self, data: Any, *, capacity_rows: int, length: int, max_size: int) -> None:
        """Restores the filled ``rows`` of a format-2 checkpoint into a storage of ``capacity_rows`` rows."""
        rows = data.shape[0]
        if self._storage is None:
            if isinstance(data, torch.Tensor):
                template = torch.zeros(data.shape[1:], dtype=data.dtype)
            else:
                template = data.apply(lambda x: torch.zeros(x.shape[1:], dtype=x.dtype), batch_size=data.batch_size[1:])
            self._allocate_rows(template, capacity_rows)
            self.max_size = max_size
        elif (shape := self._ready_layout().storage_shape)[0] != capacity_rows or shape[1:] != data.shape[1:self.ndim]:
            raise ValueError(
                f"{type(self).__name__}: the checkpoint holds a storage of {capacity_rows} rows "
                f"(item batch {tuple(data.shape[1:self.ndim])}), this one has {tuple(shape)}."
            )
        leaves = self._validate(data, 1)
        layout, storage = self._ready_layout(), self._storage
        if layout.fast:
            layout.write_rows(slice(0, rows), leaves, rows)
        elif storage is not None:  # allocated with the layout
            storage[:rows] = data
        self._len = length
        self._last_cursor = None

    def _allocate_rows(self, item: torch.Tensor | TensorDictBase, rows: int) -> None:
        raise RuntimeError(f"{type(self).__name__} must be given its storage at construction.")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_size={self.max_size}, len={len(self)}, ndim={self.ndim}, device={self.device})"


class LazyTensorStorage(TensorStorage):
    """A :class:`TensorStorage` that allocates its tensors from the first item written.

    Args:
        max_size: the capacity, in items (cells of all ``ndim`` storage dims).

    Keyword Args:
        device: where the data live. Defaults to ``"cpu"``; ``"auto"`` takes the data's device.
        ndim: see :class:`TensorStorage`.
        compilable: see :class:`Storage`.
        consolidated: accepted for TorchRL compatibility; storage leaves are always contiguous.
        shared_init: allocate in shared memory (for multi-process writers).
        cleanup_memmap: accepted for TorchRL compatibility (no memmap files are created).

    Examples:
        >>> storage = LazyTensorStorage(100)
        >>> storage.set(torch.arange(3), TensorDict({("obs", "pixels"): torch.zeros(3, 4)}, [3]))
        >>> storage._storage.batch_size, len(storage)
        (torch.Size([100]), 3)
    """

    def __init__(
        self,
        max_size: int,
        *,
        device: torch.device | str = "cpu",
        ndim: int = 1,
        compilable: bool = False,
        consolidated: bool = False,
        shared_init: bool = False,
        cleanup_memmap: bool = True,
    ) -> None:
        super().__init__(None, max_size, device=device, ndim=ndim, compilable=compilable)
        self.consolidated = consolidated
        self.shared_init = shared_init
        self._shared = shared_init

    def _target_device(self, item: Any) -> torch.device:
        if self.device == "auto":
            return item.device if item.device is not None else torch.device("cpu")
        return torch.device(self.device)

    def _init(self, item: torch.Tensor | TensorDictBase) -> None:
        if not isinstance(item, (torch.Tensor, TensorDictBase)):
            raise TypeError(f"{type(self).__name__} stores tensors or TensorDicts, got {type(item).__name__}.")
        self._allocate_rows(item, self._max_size_along_dim0(single_data=item))

    def _allocate_rows(self, item: torch.Tensor | TensorDictBase, rows: int) -> None:
        device = self._target_device(item)
        item, objects = split_non_tensor(item)
        storage: torch.Tensor | TensorDictBase
        if isinstance(item, torch.Tensor):
            storage = torch.empty((rows, *item.shape), dtype=item.dtype, device=device)
        else:
            storage = applied(
                item,
                lambda x: torch.empty((rows, *x.shape), dtype=x.dtype, device=device),
                batch_size=[rows, *item.batch_size],
                device=device if item.device is not None else None,
            )
        if self.device == "auto":
            self.device = device
        self.max_size = rows * max(1, math.prod((item.shape if isinstance(item, torch.Tensor) else item.batch_size)[: self.ndim - 1]))
        self._allocated(storage, list(objects))

    def _empty(self) -> None:
        super()._empty()
