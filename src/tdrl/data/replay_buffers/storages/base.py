"""The ``Storage`` interface: where a replay buffer keeps its items."""

from __future__ import annotations

import abc
import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from tdrl.data.replay_buffers.checkpointers import (
    check_plain,
    load_tensors,
    resolve_checkpoint,
    save_tensors,
    write_checkpoint,
)

__all__ = ["Storage"]


class Storage(abc.ABC):
    """Base class of replay-buffer storages.

    A storage holds up to ``max_size`` items and supports ``set(cursor, data)``, ``get(index)`` and
    ``len()``. ``index`` may be an int, a sequence / 1-D tensor of ints, a slice, or (for
    multi-dimensional storages, ``ndim > 1``) a tuple of index tensors, one per storage dimension.

    Samplers and writers rely on :attr:`ndim`, :attr:`shape`, :attr:`max_size`, :attr:`_is_full` and
    :meth:`_rand_given_ndim`. Objects that read the storage (samplers caching per-item data) register
    themselves with :meth:`attach` and get ``mark_update(index)`` calls on every write.

    Args:
        max_size: the capacity of the storage, in items.

    Keyword Args:
        compilable: whether the storage is used under :func:`torch.compile` (skips host syncs in the
            validation of indices).

    Examples:
        >>> from tdrl.data import ListStorage
        >>> storage = ListStorage(3)
        >>> storage.set([0, 1], ["a", "b"])
        >>> len(storage), storage.get(1), storage._is_full
        (2, 'b', False)
    """

    ndim: int = 1
    max_size: int
    _rng: torch.Generator | None = None

    def __init__(self, max_size: int, *, compilable: bool = False) -> None:
        if max_size is None or int(max_size) <= 0:
            raise ValueError(f"Storage max_size must be a positive integer, got {max_size!r}.")
        self.max_size = int(max_size)
        self._compilable = bool(compilable)
        self._attached_entities_list: list[Any] = []
        self._last_cursor: Any = None

    # ---- abstract API -------------------------------------------------------------------------
    @abc.abstractmethod
    def set(self, cursor: Any, data: Any, *, set_cursor: bool = True) -> None:
        """Writes ``data`` at ``cursor``; ``set_cursor=False`` leaves the length unchanged."""

    @abc.abstractmethod
    def get(self, index: Any) -> Any:
        """Reads the items at ``index``."""

    def _get_sampled(self, index: Any) -> Any:
        """``get`` for indices a sampler drew from this storage (storages may skip bounds checks)."""
        return self.get(index)

    @abc.abstractmethod
    def __len__(self) -> int:
        """The number of items written so far (capped at ``max_size``)."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """The storage content and length, as tensors and plain Python values."""

    @abc.abstractmethod
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` returned."""

    @abc.abstractmethod
    def _empty(self) -> None:
        """Forgets every item (the capacity and any allocation are kept)."""

    # ---- shared behaviour ---------------------------------------------------------------------
    def empty(self) -> None:
        """Forgets every item; the storage keeps its capacity."""
        self._empty()

    @property
    def _is_full(self) -> bool:
        return len(self) >= self.max_size

    @property
    def _len_along_dim0(self) -> int:
        return len(self)

    def _max_size_along_dim0(self, *, single_data: Any = None, batched_data: Any = None) -> int:
        return self.max_size

    @property
    def shape(self) -> torch.Size:
        """The filled shape of the storage along its ``ndim`` storage dimensions."""
        return torch.Size([len(self)])

    @property
    def _attached_entities(self) -> list[Any]:
        return self._attached_entities_list

    def attach(self, buffer: Any) -> None:
        """Registers ``buffer`` (typically a sampler) to receive ``mark_update(index)`` on writes.

        Args:
            buffer: any object with a ``mark_update(index)`` method.
        """
        if all(buffer is not other for other in self._attached_entities_list):
            self._attached_entities_list.append(buffer)

    def _notify_write(self, index: Any) -> None:
        for entity in self._attached_entities_list:
            entity.mark_update(index, storage=self)

    def _rand_given_ndim(self, batch_size: int) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """Uniform random indices into the filled part of the storage."""
        return torch.randint(0, len(self), (batch_size,), generator=self._rng, device=self._rand_device)

    @property
    def _rand_device(self) -> torch.device | None:
        device = getattr(self, "device", None)
        return None if device is None or device == "auto" else device

    def dumps(self, path: str | os.PathLike, *, allow_pickle_unsafe: bool = False) -> None:
        """Writes the storage as an atomic, checksummed checkpoint under the directory ``path``.

        Args:
            path: the checkpoint directory.
            allow_pickle_unsafe: let a list storage pickle items that are not tensors, numbers, strings,
                lists or dicts (loading such a checkpoint then needs ``allow_pickle_unsafe=True`` too).

        Raises:
            TypeError: an item only pickle can store, without ``allow_pickle_unsafe``.
            CheckpointWriteError: disk full or I/O error (the previous checkpoint at ``path`` is intact).
        """
        write_checkpoint(
            path,
            functools.partial(self._dump_checkpointed, allow_pickle_unsafe=allow_pickle_unsafe),
            needed=self._dump_nbytes(),
        )

    def loads(self, path: str | os.PathLike, *, allow_pickle_unsafe: bool = False) -> None:
        """Reads a storage checkpoint written by :meth:`dumps` from ``path``, after verifying its files.

        Args:
            path: the checkpoint directory.
            allow_pickle_unsafe: load pickled items (this can run arbitrary code: only for trusted files).

        Raises:
            CheckpointError: a file is truncated, corrupted or holds pickled data (without the opt-in).
        """
        self._load_checkpointed(resolve_checkpoint(path), allow_pickle_unsafe=allow_pickle_unsafe)

    @property
    def checkpointer(self) -> Any:
        """The storage checkpointer laying the content out on disk (``None``: the native layout)."""
        return getattr(self, "_checkpointer", None)

    @checkpointer.setter
    def checkpointer(self, value: Any) -> None:
        if value is not None and not (hasattr(value, "dumps") and hasattr(value, "loads")):
            raise TypeError(f"A storage checkpointer needs dumps/loads methods, got {type(value).__name__}.")
        self._checkpointer = value

    def _dump_checkpointed(self, directory: Path, *, allow_pickle_unsafe: bool = False) -> None:
        if self.checkpointer is None:
            self._dump_into(directory, allow_pickle_unsafe=allow_pickle_unsafe)
        else:
            self.checkpointer.dumps(self, directory)

    def _load_checkpointed(self, directory: Path, *, allow_pickle_unsafe: bool = False) -> None:
        if self.checkpointer is None:
            self._load_from(directory, allow_pickle_unsafe=allow_pickle_unsafe)
        else:
            self.checkpointer.loads(self, directory)

    def _dump_nbytes(self) -> int:
        """The bytes :meth:`dumps` will write, when known without serializing (``0``: unknown)."""
        return 0

    def _dump_into(self, directory: Path, *, allow_pickle_unsafe: bool = False) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        state = self.state_dict()
        if not allow_pickle_unsafe:
            items = state.get("_storage")
            for i, item in enumerate(items if isinstance(items, list) else [state]):
                check_plain(item, f"{type(self).__name__} item {i}")
        save_tensors(directory / "storage.pt", state)

    def _load_from(self, directory: Path, *, allow_pickle_unsafe: bool = False) -> None:
        self.load_state_dict(load_tensors(directory / "storage.pt", allow_pickle_unsafe=allow_pickle_unsafe))

    def __getitem__(self, index: Any) -> Any:
        return self.get(index)

    def __setitem__(self, index: Any, value: Any) -> None:
        self.set(index, value, set_cursor=False)

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self.get(i)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_rng"] = None
        state["_attached_entities_list"] = []
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_size={self.max_size}, len={len(self)})"
