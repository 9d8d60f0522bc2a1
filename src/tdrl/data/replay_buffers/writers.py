"""Writers: where each new item goes in the storage."""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, overload

import torch
from tensordict import NestedKey, TensorDictBase, is_tensor_collection

from tdrl.data.replay_buffers.checkpointers import load_json, save_json
from tdrl.data.replay_buffers.storages.base import Storage
from tdrl.data.replay_buffers.storages.ensemble import StorageEnsemble
from tdrl.data.replay_buffers.utils import is_int, members_rng

__all__ = [
    "ImmutableDatasetWriter",
    "RoundRobinWriter",
    "TensorDictMaxValueWriter",
    "TensorDictRoundRobinWriter",
    "Writer",
    "WriterEnsemble",
]


def _batch_len(data: Any) -> int:
    if isinstance(data, (torch.Tensor, TensorDictBase)):
        return data.shape[0] if isinstance(data, torch.Tensor) else data.batch_size[0]
    return len(data)


def _ring_range(start: int, n: int, size: int, device: Any) -> torch.Tensor:
    """``arange(start, start + n) % size`` for ``n <= size``, without the (slow) int64 modulo."""
    end = start + n
    if end <= size:
        return torch.arange(start, end, device=device)
    return torch.cat([torch.arange(start, size, device=device), torch.arange(0, end - size, device=device)])


class Writer(ABC):
    """Base class of writers: a writer owns the cursor and asks its storage to write.

    Args:
        compilable: whether the writer is used under :func:`torch.compile`.

    Examples:
        >>> from tdrl.data import ListStorage
        >>> writer = RoundRobinWriter()
        >>> writer.register_storage(ListStorage(2))
        >>> writer.add("a"), writer.add("b"), writer.add("c"), writer._cursor
        (0, 1, 0, 1)
    """

    _storage: Storage

    def __init__(self, compilable: bool = False) -> None:
        self._compilable = compilable
        self._cursor = 0
        self._write_count = 0

    def register_storage(self, storage: Storage) -> None:
        """Binds the writer to ``storage``."""
        self._storage = storage

    @abstractmethod
    def add(self, data: Any) -> int | torch.Tensor | None:
        """Writes one item; returns its storage index (``None``: the writer dropped it)."""

    @abstractmethod
    def extend(self, data: Any) -> torch.Tensor:
        """Writes a batch of items (leading dim); returns their storage indices."""

    def _empty(self, empty_write_count: bool = True) -> None:
        self._cursor = 0
        if empty_write_count:
            self._write_count = 0

    def state_dict(self) -> dict[str, Any]:
        """The cursor and write count."""
        return {"_cursor": self._cursor, "_write_count": self._write_count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`."""
        self._cursor = int(state_dict["_cursor"])
        self._write_count = int(state_dict.get("_write_count", 0))

    def dumps(self, path: str | Path) -> None:
        """Writes :meth:`state_dict` as JSON under the directory ``path``."""
        Path(path).mkdir(parents=True, exist_ok=True)
        save_json(Path(path) / "writer.json", self.state_dict())

    def loads(self, path: str | Path) -> None:
        """Reads what :meth:`dumps` wrote."""
        self.load_state_dict(load_json(Path(path) / "writer.json"))

    @overload
    def _replicate_index(self, index: torch.Tensor) -> torch.Tensor: ...
    @overload
    def _replicate_index(self, index: int) -> int | torch.Tensor: ...
    def _replicate_index(self, index: int | torch.Tensor) -> int | torch.Tensor:
        # Multi-dim storages: one (row, *inner) coordinate per written cell.
        if self._storage.ndim == 1:
            return index
        inner = self._storage.shape[1:]
        mesh = torch.stack(
            torch.meshgrid(*(torch.arange(d) for d in inner), indexing="ij"), -1
        ).reshape(-1, len(inner))
        rows = torch.as_tensor(index).reshape(-1)
        return torch.cat([rows.repeat_interleave(mesh.shape[0]).unsqueeze(1), mesh.repeat(rows.numel(), 1)], 1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cursor={self._cursor}, full_storage={self._storage._is_full if hasattr(self, '_storage') else False})"


class RoundRobinWriter(Writer):
    """Writes items one after the other, wrapping around to overwrite the oldest.

    Args:
        compilable: whether the writer is used under :func:`torch.compile`.

    Keyword Args:
        track_generations: accepted for TorchRL compatibility; generations are not tracked.

    Examples:
        >>> from tdrl.data import LazyTensorStorage
        >>> writer = RoundRobinWriter()
        >>> writer.register_storage(LazyTensorStorage(4))
        >>> writer.extend(torch.zeros(3)), writer.extend(torch.ones(3)), writer._cursor
        (tensor([0, 1, 2]), tensor([3, 0, 1]), 2)
    """

    def __init__(self, compilable: bool = False, *, track_generations: bool = False) -> None:
        super().__init__(compilable)
        self.track_generations = track_generations

    def add(self, data: Any) -> int | torch.Tensor | None:
        index = self._cursor
        max_rows = self._storage._max_size_along_dim0(single_data=data)
        self._storage.set(index, data)
        self._cursor = (index + 1) % max_rows
        self._write_count += 1
        return self._replicate_index(index)

    def extend(self, data: Any) -> torch.Tensor:
        n = _batch_len(data)
        if n == 0:
            raise RuntimeError(f"{type(self).__name__}.extend: got an empty batch; expected at least one item.")
        cursor = self._cursor
        max_rows = self._storage._max_size_along_dim0(batched_data=data)
        device = getattr(data, "device", None) or torch.device("cpu")
        if n > max_rows:
            # Only the last max_rows items survive a write larger than the storage.
            skip = n - max_rows
            data = data[skip:]
            start = (cursor + skip) % max_rows
            index = torch.arange(cursor, cursor + n, device=device) % max_rows
            self._write_rows(start, max_rows, data, max_rows, device)
        else:
            index = _ring_range(cursor, n, max_rows, device)
            self._write_rows(cursor, n, data, max_rows, device, index)
        self._cursor = (cursor + n) % max_rows
        self._write_count += n
        return self._replicate_index(index)

    def write_at(self, index: int | torch.Tensor, data: Any) -> int | torch.Tensor:
        """Writes ``data`` at the storage slot(s) ``index`` without moving the cursor; returns ``index``.

        Used by buffers that refill freed slots (``consume_after_n_samples``). ``data`` holds one item
        for an ``int`` index, else one item per index along its first dim.

        Examples:
            >>> from tdrl.data import LazyTensorStorage
            >>> writer = RoundRobinWriter()
            >>> writer.register_storage(LazyTensorStorage(4))
            >>> _ = writer.extend(torch.zeros(4))
            >>> writer.write_at(torch.tensor([2, 0]), torch.ones(2)), writer._cursor, writer._storage[:]
            (tensor([2, 0]), 0, tensor([1., 0., 1., 0.]))
        """
        if is_int(index):
            index, n, top = int(index), 1, int(index) + 1
        else:
            index = torch.as_tensor(index, dtype=torch.long).reshape(-1)
            n, top = index.numel(), int(index.max()) + 1 if index.numel() else 0
        self._storage.set(index, data, set_cursor=False)
        storage: Any = self._storage
        if isinstance(getattr(storage, "_len", None), int):
            # A tensor storage's length covers every slot up to the highest written.
            storage._len = min(max(storage._len, top), storage.max_size)
        self._write_count += n
        return self._replicate_index(index)

    def _write_rows(
        self, start: int, n: int, data: Any, max_rows: int, device: Any, index: torch.Tensor | None = None
    ) -> None:
        if start + n <= max_rows:
            # Contiguous block: a slice write is a plain copy, cheaper than an indexed scatter.
            self._storage.set(slice(start, start + n), data)
        elif hasattr(self._storage, "_layout"):
            # Wrapped block on a tensor storage: two slice copies beat one indexed scatter.
            first = max_rows - start
            self._storage.set(slice(start, max_rows), data[:first])
            self._storage.set(slice(0, n - first), data[first:])
        else:
            if index is None:
                index = _ring_range(start, n, max_rows, device)
            self._storage.set(index, data)


class TensorDictRoundRobinWriter(RoundRobinWriter):
    """The round-robin writer of TensorDict buffers.

    TorchRL's version also writes an ``"index"`` entry into the stored data; tdrl's TensorDict
    buffers write ``"index"`` into sampled batches only (see ``docs/replay_buffers.md``).

    Examples:
        >>> from tdrl.data import LazyTensorStorage
        >>> from tensordict import TensorDict
        >>> writer = TensorDictRoundRobinWriter()
        >>> writer.register_storage(LazyTensorStorage(4))
        >>> writer.extend(TensorDict(a=torch.zeros(5), batch_size=[5]))
        tensor([0, 1, 2, 3, 0])
    """


_REDUCTIONS: dict[str, Callable[..., torch.Tensor]] = {
    "sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin,
}


class TensorDictMaxValueWriter(Writer):
    """Keeps the items with the highest rank (``rank_key``) once the storage is full.

    New items take free slots while there are some; then each new item replaces the lowest-ranked
    stored item if it ranks higher, else it is dropped. ``extend`` returns ``-1`` for items that were
    dropped (or replaced by a later item of the same batch); ``add`` returns ``None`` for them.

    Args:
        rank_key: the key ranking items. Defaults to ``("next", "reward")``.
        reduction: how a rank with trailing dims is reduced to a scalar per item: ``"sum"``,
            ``"mean"``, ``"max"`` or ``"min"``. Defaults to ``"sum"``.

    Examples:
        >>> from tdrl.data import LazyTensorStorage
        >>> from tensordict import TensorDict
        >>> writer = TensorDictMaxValueWriter(rank_key="r")
        >>> writer.register_storage(LazyTensorStorage(3))
        >>> writer.extend(TensorDict(r=torch.tensor([1.0, 5.0, 3.0, 2.0]), batch_size=[4]))
        tensor([-1,  1,  2,  0])
    """

    def __init__(self, rank_key: NestedKey | None = None, reduction: str = "sum", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rank_key = ("next", "reward") if rank_key is None else rank_key
        if reduction not in _REDUCTIONS:
            raise ValueError(f"reduction must be one of {sorted(_REDUCTIONS)}, got {reduction!r}.")
        self._reduction = reduction
        self._current_top_values: list[tuple[float, int]] = []  # min-heap of (rank, slot)

    def register_storage(self, storage: Storage) -> None:
        if storage.ndim != 1:
            raise ValueError(f"TensorDictMaxValueWriter needs a 1-D storage, got ndim={storage.ndim}.")
        super().register_storage(storage)

    def _ranks(self, data: TensorDictBase, batched: bool) -> list[float]:
        if not is_tensor_collection(data):
            raise TypeError(f"TensorDictMaxValueWriter writes TensorDicts, got {type(data).__name__}.")
        rank = data.get(self._rank_key, None)
        if rank is None:
            raise KeyError(f"TensorDictMaxValueWriter: rank_key {self._rank_key!r} is missing from the data.")
        lead = 1 if batched else 0
        if rank.ndim > lead:
            rank = _REDUCTIONS[self._reduction](rank.float(), dim=tuple(range(lead, rank.ndim)))
        return rank.reshape(-1).tolist()

    def _place(self, ranks: list[float]) -> list[int]:
        """Slots for each rank (-1 when dropped), updating the heap; no storage write."""
        heap, cap, slots = self._current_top_values, self._storage.max_size, []
        for r in ranks:
            if self._cursor < cap:
                slot = self._cursor
                self._cursor += 1
                heapq.heappush(heap, (r, slot))
            elif heap and r > heap[0][0]:
                slot = heapq.heapreplace(heap, (r, heap[0][1]))[1]
            else:
                slot = -1
            slots.append(slot)
        return slots

    def add(self, data: Any) -> int | None:
        ranks = self._ranks(data, batched=False)
        state = (self._cursor, list(self._current_top_values))
        slots = self._place(ranks)
        if slots[0] < 0:
            return None
        try:
            self._storage.set(slots[0], data)
        except Exception:
            self._cursor, self._current_top_values = state
            raise
        self._write_count += 1
        return slots[0]

    def extend(self, data: Any) -> torch.Tensor:
        ranks = self._ranks(data, batched=True)
        state = (self._cursor, list(self._current_top_values))
        slots = self._place(ranks)
        last_writer: dict[int, int] = {}
        for item, slot in enumerate(slots):
            if slot >= 0:
                last_writer[slot] = item
        index = torch.full((len(slots),), -1, dtype=torch.long)
        if last_writer:
            items = torch.tensor(list(last_writer.values()))
            targets = torch.tensor(list(last_writer.keys()))
            index[items] = targets
            try:
                self._storage.set(targets, data[items])
            except Exception:
                self._cursor, self._current_top_values = state
                raise
        self._write_count += len(slots)
        return index

    def get_insert_index(self, data: Any) -> int | None:
        """The slot ``data`` would take if added now (``None`` if it would be dropped); no write."""
        ranks = self._ranks(data, batched=False)
        state = (self._cursor, list(self._current_top_values))
        slot = self._place(ranks)[0]
        self._cursor, self._current_top_values = state
        return None if slot < 0 else slot

    def _empty(self, empty_write_count: bool = True) -> None:
        super()._empty(empty_write_count)
        self._current_top_values = []

    def state_dict(self) -> dict[str, Any]:
        out = super().state_dict()
        out["_current_top_values"] = [[float(r), int(s)] for r, s in self._current_top_values]
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._current_top_values = [(float(r), int(s)) for r, s in state_dict.get("_current_top_values", [])]
        heapq.heapify(self._current_top_values)


class ImmutableDatasetWriter(Writer):
    """A writer that refuses every write: the storage is a fixed dataset (e.g. an offline dataset on disk).

    ``add``, ``extend`` and ``empty`` raise ``RuntimeError``; the (empty) state saves and loads.

    Examples:
        >>> import torch
        >>> from tdrl.data import ImmutableDatasetWriter, LazyTensorStorage, ReplayBuffer
        >>> storage = LazyTensorStorage(4)
        >>> storage.set(torch.arange(4), torch.arange(4))
        >>> rb = ReplayBuffer(storage=storage, writer=ImmutableDatasetWriter(), batch_size=2)
        >>> rb.sample().shape
        torch.Size([2])
        >>> rb.extend(torch.zeros(2))
        Traceback (most recent call last):
        ...
        RuntimeError: This dataset doesn't allow writing.
    """

    WRITING_ERR = "This dataset doesn't allow writing."

    def add(self, data: Any) -> int:
        raise RuntimeError(self.WRITING_ERR)

    def extend(self, data: Any) -> torch.Tensor:
        raise RuntimeError(self.WRITING_ERR)

    def _empty(self, empty_write_count: bool = True) -> None:
        raise RuntimeError(self.WRITING_ERR)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        return None


class WriterEnsemble(Writer):
    """The writers of a :class:`~tdrl.data.ReplayBufferEnsemble`, one per member storage.

    It does not write itself: writes go to a member buffer (``ensemble[i].extend(...)``).
    ``register_storage`` binds each writer to its member of a :class:`~tdrl.data.StorageEnsemble`;
    state, checkpoints and ``_empty`` fan out to the members; ``ensemble[i]`` is the i-th writer.

    Args:
        *writers: one writer per member storage.

    Examples:
        >>> from tdrl.data import LazyTensorStorage, StorageEnsemble
        >>> writers = WriterEnsemble(RoundRobinWriter(), RoundRobinWriter())
        >>> writers.register_storage(StorageEnsemble(LazyTensorStorage(4), LazyTensorStorage(4)))
        >>> _ = writers[1].extend(torch.zeros(3))
        >>> writers._write_count, writers.state_dict()["1"]
        (3, {'_cursor': 3, '_write_count': 3})
    """

    def __init__(self, *writers: Writer) -> None:
        bad = [type(w).__name__ for w in writers if not isinstance(w, Writer)]
        if not writers or bad:
            raise TypeError(f"WriterEnsemble needs one or more Writer instances, got {bad or 'none'}.")
        super().__init__()
        self._writers = list(writers)

    _rng = members_rng("_writers")

    @property
    def tracks_generations(self) -> bool:
        """Whether every member tracks slot generations (tdrl writers do not)."""
        return all(bool(getattr(w, "tracks_generations", False)) for w in self._writers)

    @property
    def _write_count(self) -> int:
        return sum(w._write_count for w in self.__dict__.get("_writers", ()))

    @_write_count.setter
    def _write_count(self, value: int) -> None:
        return  # derived from the members (Writer.__init__ assigns it)

    def register_storage(self, storage: Storage) -> None:
        if not isinstance(storage, StorageEnsemble):
            raise TypeError(f"WriterEnsemble needs a StorageEnsemble, got {type(storage).__name__}.")
        members = storage._storages
        if len(members) != len(self._writers):
            raise ValueError(f"WriterEnsemble has {len(self._writers)} writers for {len(members)} storages.")
        self._storage = storage
        for writer, member in zip(self._writers, members):
            writer.register_storage(member)

    def add(self, data: Any) -> int | torch.Tensor | None:
        raise TypeError("WriterEnsemble does not write: add to a member buffer (ensemble[i].add).")

    def extend(self, data: Any) -> torch.Tensor:
        raise TypeError("WriterEnsemble does not write: extend a member buffer (ensemble[i].extend).")

    def _empty(self, empty_write_count: bool = True) -> None:
        for writer in self._writers:
            writer._empty(empty_write_count)

    def state_dict(self) -> dict[str, Any]:
        return {str(i): w.state_dict() for i, w in enumerate(self._writers)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for i, writer in enumerate(self._writers):
            writer.load_state_dict(state_dict[str(i)])

    def dumps(self, path: str | Path) -> None:
        for i, writer in enumerate(self._writers):
            writer.dumps(Path(path) / str(i))

    def loads(self, path: str | Path) -> None:
        for i, writer in enumerate(self._writers):
            writer.loads(Path(path) / str(i))

    def __getitem__(self, index: int | slice | list[int]) -> Writer:
        if isinstance(index, int):
            if not -len(self._writers) <= index < len(self._writers):
                raise IndexError(f"WriterEnsemble member id {index} out of range for {len(self._writers)} members.")
            return self._writers[index]
        chosen = self._writers[index] if isinstance(index, slice) else [self._writers[int(i)] for i in index]
        return WriterEnsemble(*chosen)

    def __len__(self) -> int:
        return len(self._writers)

    def __repr__(self) -> str:
        return f"WriterEnsemble(writers={self._writers})"
