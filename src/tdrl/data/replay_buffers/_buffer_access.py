"""Whole-buffer reads, in-place writes, component swaps and a stats snapshot for :class:`ReplayBuffer`.

Kept apart from ``replay_buffers.py`` (the add/extend/sample hot path) as a mixin: none of these methods
is on the sampling path, and each only goes through the storage, sampler and writer the buffer holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase, is_tensor_collection
from tensordict.utils import NestedKey

from tdrl.data.replay_buffers.storage_checkpointers import StorageCheckpointerBase, TensorStorageCheckpointer

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.samplers.base import Sampler
    from tdrl.data.replay_buffers.storages.base import Storage
    from tdrl.data.replay_buffers.writers import Writer

__all__ = ["BufferAccessMixin"]


class BufferAccessMixin:
    """Methods of :class:`~tdrl.data.ReplayBuffer` that read or rewrite the buffer as a whole."""

    _storage: Storage
    _sampler: Sampler
    _writer: Writer
    _batch_size: int | None
    _lock: Any
    _prefetch_queue: Any
    _transform: Any
    dim_extend: int

    if TYPE_CHECKING:  # provided by ReplayBuffer

        def __len__(self) -> int: ...
        def __getitem__(self, index: Any) -> Any: ...
        def _transpose(self, data: Any) -> Any: ...
        def __iter__(self) -> Iterator[Any]: ...

    @property
    def initialized(self) -> bool:
        """Always ``True``: tdrl builds the storage, sampler and writer in the constructor."""
        return True

    def stats(self) -> dict[str, int | float | bool]:
        """A cheap snapshot of the buffer's counters (never its content).

        Returns:
            ``size`` (``len(buffer)``), ``write_count``, ``prefetch_queue_size``, ``initialized`` and, when
            the storage has a ``max_size``, ``capacity`` and ``utilization`` (``size / capacity``).

        Examples:
            >>> import torch
            >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
            >>> rb = ReplayBuffer(storage=LazyTensorStorage(10))
            >>> _ = rb.extend(torch.arange(5))
            >>> s = rb.stats()
            >>> s["size"], s["write_count"], s["capacity"], s["utilization"]
            (5, 5, 10, 0.5)
        """
        with self._lock:
            size = len(self)
            write_count = getattr(self._writer, "_write_count", 0)
            capacity = getattr(self._storage, "max_size", None)
            queued = len(self._prefetch_queue)
        out: dict[str, int | float | bool] = {
            "size": int(size),
            "write_count": int(write_count),
            "prefetch_queue_size": int(queued),
            "initialized": True,
        }
        if capacity is not None:
            out["capacity"] = int(capacity)
            out["utilization"] = float(size) / capacity if capacity else 0.0
        return out

    def can_sample(self, batch_size: int | None = None) -> bool:
        """Whether the sampler can serve a batch of ``batch_size`` (default: the buffer's batch size)."""
        if batch_size is None:
            batch_size = self._batch_size
        if batch_size is None:
            raise RuntimeError("can_sample() needs a batch_size: pass one here or to the constructor.")
        with self._lock:
            return self._sampler.can_sample(self._storage, batch_size)

    def read_all_in_order(self, end: int | None = None) -> Any:
        """The first ``end`` storage entries in physical (storage) order; everything when ``end`` is None.

        Examples:
            >>> import torch
            >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
            >>> rb = ReplayBuffer(storage=LazyTensorStorage(4))
            >>> _ = rb.extend(torch.arange(6))  # wraps around: storage holds [4, 5, 2, 3]
            >>> rb.read_all_in_order(), rb.read_all_in_order(2)
            (tensor([4, 5, 2, 3]), tensor([4, 5]))
        """
        return self[:] if end is None else self[:end]

    def write_all(self, data: Any, end: int | None = None) -> None:
        """Writes ``data`` over the first ``end`` storage entries in physical order (``rb[:end] = data``).

        ``end`` defaults to the whole storage when the buffer is full, else to ``len(data)``.

        Examples:
            >>> import torch
            >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
            >>> rb = ReplayBuffer(storage=LazyTensorStorage(4))
            >>> _ = rb.extend(torch.arange(3))
            >>> rb.write_all(torch.zeros(2, dtype=torch.long))
            >>> rb[:]
            tensor([0, 0, 2])
        """
        if end is None:
            max_size = getattr(self._storage, "max_size", None)
            if max_size is not None and len(self) == max_size:
                self[:] = data
                return
            end = data.shape[0] if is_tensor_collection(data) or isinstance(data, torch.Tensor) else len(data)
        self[:end] = data

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, str) or (
            isinstance(index, tuple) and index and all(isinstance(k, str) for k in index)
        ):
            content = self[:]
            content[index] = value
            self._storage.set(torch.arange(len(self)), content, set_cursor=False)
            return
        if self._transform:
            value = self._transform.inv(value)
        if isinstance(index, slice):
            index = torch.arange(len(self))[index]
        if self.dim_extend > 0:
            value = self._transpose(value)
        with self._lock:
            self._storage.set(index, value, set_cursor=False)

    def _whole_td(self) -> TensorDictBase:
        content = self._storage.get(slice(None)) if hasattr(self._storage, "get") else self[:]
        if not isinstance(content, TensorDictBase):
            raise TypeError(
                f"set_/set_at_/update_ need a storage of TensorDicts, got {type(content).__name__} content."
            )
        return content

    def set_at_(self, key: NestedKey, value: torch.Tensor, index: Any) -> BufferAccessMixin:
        """Writes ``value`` into entry ``key`` at storage rows ``index``, in place; returns ``self``."""
        with self._lock:
            self._whole_td().set_at_(key, value, index)
        return self

    def set_(self, key: NestedKey, value: torch.Tensor) -> BufferAccessMixin:
        """Overwrites entry ``key`` over the whole filled storage, in place; returns ``self``."""
        with self._lock:
            self._whole_td().set_(key, value)
        return self

    def update_(
        self, input_dict_or_td: dict | TensorDictBase, clone: bool = False, *, keys_to_update: Any = None
    ) -> BufferAccessMixin:
        """Updates the filled storage in place from a dict or TensorDict; returns ``self``."""
        with self._lock:
            self._whole_td().update_(input_dict_or_td, clone=clone, keys_to_update=keys_to_update)
        return self

    def set_storage(self, storage: Storage, collate_fn: Any = None) -> Storage:
        """Replaces the storage (the writer is re-registered on it); returns the previous one."""
        previous = self._storage
        self._storage = storage
        self._writer.register_storage(storage)
        storage._rng = getattr(self, "_rng", None)
        if collate_fn is not None:
            self._collate_fn = collate_fn
        return previous

    def set_writer(self, writer: Writer) -> Writer:
        """Replaces the writer (registered on the current storage); returns the previous one."""
        previous = self._writer
        self._writer = writer
        writer.register_storage(self._storage)
        return previous

    def set_sampler(self, sampler: Sampler) -> Sampler:
        """Replaces the sampler; returns the previous one."""
        previous = self._sampler
        self._sampler = sampler
        sampler._rng = getattr(self, "_rng", None)
        return previous

    def register_save_hook(self, hook: Callable[..., Any]) -> None:
        """Adds a hook transforming the storage content before :meth:`dumps` writes it (e.g. ``TED2Flat()``)."""
        self._hooked_checkpointer().register_save_hook(hook)

    def register_load_hook(self, hook: Callable[..., Any]) -> None:
        """Adds a hook transforming what :meth:`loads` reads back (e.g. ``Flat2TED()``)."""
        self._hooked_checkpointer().register_load_hook(hook)

    def _hooked_checkpointer(self) -> StorageCheckpointerBase:
        checkpointer = self._storage.checkpointer
        if checkpointer is None:
            checkpointer = self._storage.checkpointer = TensorStorageCheckpointer()
        return checkpointer

    def next(self) -> Any:
        """The next batch of an ongoing iteration over the buffer; ``None`` once it ends (then restarts)."""
        iterator: Iterator[Any] | None = getattr(self, "_iterator", None)
        if iterator is None:
            iterator = iter(self)
            self._iterator: Iterator[Any] | None = iterator
        try:
            return next(iterator)
        except StopIteration:
            self._iterator = None
            return None
