"""``ReplayBuffer``: storage + sampler + writer, with transforms, prefetching and checkpoints."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import torch
from tensordict import TensorDictBase, is_tensorclass

from tdrl.data.replay_buffers._buffer_access import BufferAccessMixin
from tdrl.data.replay_buffers.checkpointers import (
    check_plain,
    load_json,
    load_tensors,
    resolve_checkpoint,
    save_json,
    save_tensors,
    write_checkpoint,
)
from tdrl.data.replay_buffers.sample_units import SampleUnit
from tdrl.data.replay_buffers.samplers.base import Sampler
from tdrl.data.replay_buffers.samplers.consuming import ConsumingSampler, check_sample_count
from tdrl.data.replay_buffers.samplers.random import RandomSampler
from tdrl.data.replay_buffers.storages.base import Storage
from tdrl.data.replay_buffers.storages.list import LazyStackStorage, ListStorage
from tdrl.data.replay_buffers.storages.tensor import TensorStorage
from tdrl.data.replay_buffers.transforms import BufferTransforms
from tdrl.data.replay_buffers.utils import is_int, stack_items
from tdrl.data.replay_buffers.writers import RoundRobinWriter, Writer

__all__ = ["ReplayBuffer"]

_T = TypeVar("_T")


def _identity(x: Any) -> Any:
    return x


def _build(obj: Any, kind: type[_T]) -> _T | None:
    # TorchRL accepts a component or a zero-argument factory building one.
    if obj is None or isinstance(obj, kind):
        return obj
    if callable(obj):
        built = obj()
        if not isinstance(built, kind):
            raise TypeError(f"The {kind.__name__} factory returned a {type(built).__name__}.")
        return built
    raise TypeError(f"Expected a {kind.__name__} or a factory of one, got {type(obj).__name__}.")


# TorchRL arguments tdrl accepts only at their default (features it does not implement).
_TORCHRL_DEFAULTS: dict[str, Any] = {
    "delayed_init": None,
    "service_backend": "direct",
    "service_backend_options": None,
    "transport": "auto",
    "transport_options": None,
}


def _rows(data: Any) -> int:
    """Items in a batch written by ``extend`` (leading dim, or list length)."""
    if isinstance(data, torch.Tensor):
        return data.shape[0]
    if isinstance(data, TensorDictBase):
        return data.batch_size[0]
    return len(data)


def _check_unsupported(kwargs: dict[str, Any]) -> None:
    unknown = sorted(k for k in kwargs if k not in _TORCHRL_DEFAULTS)
    if unknown:
        raise TypeError(f"ReplayBuffer got unexpected keyword arguments: {unknown}.")
    for key, value in kwargs.items():
        default = _TORCHRL_DEFAULTS[key]
        if value is not default and value != default and not (key == "delayed_init" and value is False):
            raise ValueError(
                f"ReplayBuffer: {key}={value!r} is not supported by tdrl (only the default {default!r})."
            )


class ReplayBuffer(BufferAccessMixin):
    """A replay buffer: a :class:`Storage`, a :class:`Sampler` and a :class:`Writer`.

    ``extend(data)`` writes a batch (leading dim, or dim ``dim_extend``), ``add(item)`` one item,
    ``sample()`` draws ``batch_size`` items. Transforms appended with :meth:`append_transform` run
    on sampled data; their ``inv`` (if any) runs on written data. One writer thread and several
    sampling threads may share a buffer: a lock serializes writes and samples.

    Keyword Args:
        storage: defaults to ``ListStorage(1000)``. A factory (zero-arg callable) is also accepted.
        sampler: defaults to :class:`RandomSampler`.
        writer: defaults to :class:`RoundRobinWriter`.
        collate_fn: merges what the storage returns into a batch; defaults to stacking for list
            storages and to the identity for tensor storages.
        pin_memory: pin sampled tensors (when CUDA is available).
        prefetch: number of batches sampled ahead by a background thread.
        transform: a callable (or transform with ``inv``) applied to sampled data.
        batch_size: default batch size of :meth:`sample`.
        dim_extend: the data dimension indexed by the storage's first dim on ``extend``; defaults to
            ``storage.ndim - 1`` (``[env, time]`` batches go into ``[time, env]`` storages).
        checkpointer: a storage checkpointer (e.g. :class:`~tdrl.data.replay_buffers.H5StorageCheckpointer`)
            choosing the storage's on-disk layout; checkpoints stay atomic whichever it is.
        generator: a :class:`torch.Generator` used by the sampler and storage.
        shared: allocate lazy storages in shared memory, for use across processes.
        compilable: make ``extend``/``sample`` traceable by :func:`torch.compile` (no lock).
        sample_unit: a :class:`~tdrl.data.replay_buffers.SampleUnit` expanding each sampled anchor into
            the records of the batch (e.g. :class:`~tdrl.data.replay_buffers.Sequence` windows).
        consume_after_n_samples: retire each item once it was sampled this many times (a
            :class:`~tdrl.data.replay_buffers.ConsumingSampler` replaces the default sampler; ``len``
            counts the items left and writes refill retired slots first). ``None`` (default): items stay.

    Examples:
        >>> from tdrl.data import LazyTensorStorage
        >>> rb = ReplayBuffer(storage=LazyTensorStorage(100), batch_size=4)
        >>> rb.extend(torch.arange(10))
        tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        >>> len(rb), rb.sample().shape, rb[2]
        (10, torch.Size([4]), tensor(2))
    """

    def __init__(
        self,
        *,
        storage: Storage | Callable[[], Storage] | None = None,
        sampler: Sampler | Callable[[], Sampler] | None = None,
        writer: Writer | Callable[[], Writer] | None = None,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        prefetch: int | None = None,
        transform: Callable | None = None,
        transform_factory: Callable[[], Callable] | None = None,
        batch_size: int | None = None,
        dim_extend: int | None = None,
        checkpointer: Any = None,
        generator: torch.Generator | None = None,
        shared: bool = False,
        compilable: bool | None = None,
        sample_unit: SampleUnit | None = None,
        consume_after_n_samples: int | None = None,
        **kwargs: Any,
    ) -> None:
        _check_unsupported(kwargs)
        if consume_after_n_samples is not None:
            consume_after_n_samples = check_sample_count(consume_after_n_samples, "consume_after_n_samples")
        if sample_unit is not None and not isinstance(sample_unit, SampleUnit):
            raise TypeError(f"sample_unit must be a SampleUnit instance, got {type(sample_unit).__name__}.")
        self._sample_unit = sample_unit
        built_storage = _build(storage, Storage)
        # Unset: follow the storage (LazyTensorStorage(..., compilable=True) makes a compilable buffer).
        compilable = bool(getattr(built_storage, "_compilable", False) if compilable is None else compilable)
        built_sampler, built_writer = _build(sampler, Sampler), _build(writer, Writer)
        # Explicit None checks: an empty storage is falsy (len 0).
        self._storage: Storage = (
            ListStorage(1000, compilable=compilable) if built_storage is None else built_storage
        )
        self._sampler: Sampler = RandomSampler() if built_sampler is None else built_sampler
        if consume_after_n_samples is not None:
            self._sampler = self._consuming(self._sampler, consume_after_n_samples)
        self._writer: Writer = self._default_writer(compilable) if built_writer is None else built_writer
        self._writer.register_storage(self._storage)
        if checkpointer is not None:
            self._storage.checkpointer = checkpointer
        if shared and hasattr(self._storage, "_shared"):
            self._storage._shared = True
        self._shared = shared
        self._compilable = compilable
        if collate_fn is None:
            collate_fn = self._default_collate(self._storage)
        self._collate_fn = collate_fn
        self._get_collate = collate_fn is not _identity
        # Default list collate: let the storage gather rows of written batches directly.
        self._stacked_get = collate_fn is stack_items and hasattr(self._storage, "get_stacked")
        self._pin_memory = pin_memory and torch.cuda.is_available()
        self._prefetch_cap = int(prefetch or 0)
        if isinstance(self._sampler, ConsumingSampler):
            self._check_consuming()
        self._prefetch_queue: deque[Future] = deque()
        self._prefetch_executor: ThreadPoolExecutor | None = None
        self._prefetch_lock = threading.Lock()
        self._batch_size = batch_size
        if transform is not None and transform_factory is not None:
            raise TypeError("Pass transform or transform_factory, not both.")
        if transform_factory is not None:
            transform = transform_factory()
        self._transform = BufferTransforms([] if transform is None else [transform])
        if dim_extend is not None and dim_extend < 0:
            raise ValueError(f"dim_extend must be non-negative, got {dim_extend}.")
        self.dim_extend = self._storage.ndim - 1 if dim_extend is None else dim_extend
        self._lock: Any = contextlib.nullcontext() if compilable else threading.RLock()
        self.set_rng(generator)
        self._wrap_for_compile()

    @staticmethod
    def _consuming(sampler: Sampler, n: int) -> ConsumingSampler:
        if isinstance(sampler, ConsumingSampler):
            if sampler.max_sample_count != n:
                raise ValueError(
                    f"consume_after_n_samples={n} conflicts with the sampler's max_sample_count="
                    f"{sampler.max_sample_count}."
                )
            return sampler
        if type(sampler) is not RandomSampler:
            raise ValueError(
                "consume_after_n_samples works with the default RandomSampler (or a ConsumingSampler), "
                f"not with {type(sampler).__name__}."
            )
        return ConsumingSampler(n)

    def _check_consuming(self) -> None:
        if self._prefetch_cap:
            raise ValueError("ReplayBuffer: prefetch is not supported with a ConsumingSampler.")
        if self._storage.ndim != 1:
            raise ValueError(f"ConsumingSampler needs a 1-dimensional storage, got ndim={self._storage.ndim}.")
        if not isinstance(self._storage, (ListStorage, TensorStorage)):
            raise TypeError(f"ConsumingSampler needs a list or tensor storage, got {type(self._storage).__name__}.")
        if not callable(getattr(self._writer, "write_at", None)):
            raise TypeError(
                f"ConsumingSampler needs a writer with write_at(index, data); {type(self._writer).__name__} has none."
            )

    _COMPILE_OPAQUE = ("add", "extend", "sample", "update_priority")

    def _wrap_for_compile(self) -> None:
        # The buffer's bookkeeping (cursor, length, write count) is Python state that changes every
        # call: traced by dynamo it would force a recompilation per call. In compilable mode the
        # public entry points run eagerly inside compiled code instead (one graph break each).
        if self._compilable:
            for name in self._COMPILE_OPAQUE:
                setattr(self, name, torch.compiler.disable(getattr(self, name), recursive=True))

    # ---- construction helpers ------------------------------------------------------------------
    def _default_writer(self, compilable: bool) -> Writer:
        return RoundRobinWriter(compilable=compilable)

    @staticmethod
    def _default_collate(storage: Storage) -> Callable:
        if isinstance(storage, LazyStackStorage) or isinstance(storage, TensorStorage):
            return _identity
        if isinstance(storage, ListStorage):
            return stack_items
        return _identity

    def set_rng(self, generator: torch.Generator | None) -> None:
        """Makes the sampler and storage draw random numbers from ``generator``."""
        self._rng = generator
        self._storage._rng = generator
        self._sampler._rng = generator

    # ---- properties ----------------------------------------------------------------------------
    @property
    def batch_size(self) -> int | None:
        """The default batch size of :meth:`sample`."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int | None) -> None:
        self._batch_size = value

    @property
    def storage(self) -> Storage:
        """The storage."""
        return self._storage

    @property
    def sampler(self) -> Sampler:
        """The sampler."""
        return self._sampler

    @property
    def writer(self) -> Writer:
        """The writer."""
        return self._writer

    @property
    def write_count(self) -> int:
        """Total number of items ever written."""
        return self._writer._write_count

    def __len__(self) -> int:
        if isinstance(self._sampler, ConsumingSampler):
            with self._lock:
                return self._sampler._num_sampleable(self._storage)
        return len(self._storage)

    # ---- writes --------------------------------------------------------------------------------
    def _transpose(self, data: Any) -> Any:
        if not self.dim_extend:
            return data
        ndim = data.ndim if isinstance(data, torch.Tensor) else len(data.batch_size)
        if self.dim_extend >= ndim:
            raise ValueError(f"dim_extend={self.dim_extend} but the data has only {ndim} batch dims.")
        return data.transpose(self.dim_extend, 0)

    def add(self, data: Any) -> int | torch.Tensor | None:
        """Writes one item; returns its storage index (``None`` when the writer dropped it)."""
        if self._transform:
            data = self._transform.inv(data)
            if data is None:  # held back by a write transform (e.g. MCAdvantage): nothing written
                return torch.zeros((0,), dtype=torch.long)
        if isinstance(self._storage, TensorStorage):
            data = self._storage._encode_tree(data, batched=False)  # tensorclass / pytree -> its TensorDict
        with self._lock:
            index = self._consuming_write(data, None) if isinstance(self._sampler, ConsumingSampler) else None
            if index is None:
                index = self._writer.add(data)
            if index is not None:
                self._sampler.mark_update(index, storage=self._storage)
                self._sampler.add(index)
        return index

    def extend(self, data: Any) -> torch.Tensor:
        """Writes a batch of items (along ``dim_extend``); returns their storage indices."""
        data = self._prepare_batch(data)
        if data is None:  # held back by a write transform (e.g. MCAdvantage): nothing written
            return torch.zeros((0,), dtype=torch.long)
        return self._extend(data)

    def _prepare_batch(self, data: Any) -> Any:
        if self._transform:
            data = self._transform.inv(data)
            if data is None:
                return None
        if isinstance(data, list) and data and isinstance(self._storage, TensorStorage):
            # A list holds one item per entry (as in TorchRL): stack it for tensor storages.
            data = stack_items(data)
        elif isinstance(self._storage, TensorStorage) and (isinstance(data, (tuple, dict)) or is_tensorclass(data)):
            # A tensorclass or a pytree (dict / tuple of tensors) is one batch: its TensorDict is written.
            data = self._storage._encode_tree(data, batched=True)
        if isinstance(data, (torch.Tensor, TensorDictBase)):
            return self._transpose(data)
        if isinstance(data, Iterable) and not isinstance(data, (list, tuple, str, bytes, dict)):
            # Any other iterable (``range(2000)``, a generator) holds one item per element, as in TorchRL.
            data = list(data)
            if data and isinstance(self._storage, TensorStorage):
                data = stack_items(data)
                return self._transpose(data) if isinstance(data, (torch.Tensor, TensorDictBase)) else data
        if not isinstance(data, (list, tuple)):
            raise TypeError(
                f"extend expects a tensor, a TensorDict or an iterable of items, got {type(data).__name__}."
            )
        return data

    def _consuming_write(self, data: Any, n: int | None) -> Any:
        """Writes into retired slots first (``n``: items, ``None`` for ``add``); ``None`` if there is none."""
        sampler = self._sampler
        assert isinstance(sampler, ConsumingSampler)
        freed = sampler._pop_consumed_indices(self._storage, 1 if n is None else n)
        if not freed.numel():
            return None
        writer: Any = self._writer
        if n is None:
            return writer.write_at(int(freed), data)
        if freed.numel() < n:
            # The rest goes at the writer's cursor, stepping over the slots just reused.
            size = self._storage._max_size_along_dim0(batched_data=data)
            skip, cursor = set(freed.tolist()), writer._cursor
            more: list[int] = []
            for scanned in range(n * size + size):
                if len(more) == n - freed.numel():
                    break
                if cursor not in skip or scanned >= size:
                    more.append(cursor)
                cursor = (cursor + 1) % size
            writer._cursor = cursor
            freed = torch.cat([freed, torch.tensor(more, dtype=torch.long)])
        return writer.write_at(freed, data)

    def _extend(self, data: Any) -> torch.Tensor:
        with self._lock:
            index = None
            if isinstance(self._sampler, ConsumingSampler):
                index = self._consuming_write(data, _rows(data))
            if index is None:
                index = self._writer.extend(data)
            self._sampler.mark_update(index, storage=self._storage)
            self._sampler.extend(index)
        return index

    def update_priority(self, index: int | torch.Tensor, priority: float | torch.Tensor) -> None:
        """Forwards new priorities to the sampler."""
        with self._lock:
            self._sampler.update_priority(index, priority, storage=self._storage)

    # ---- reads ---------------------------------------------------------------------------------
    def _sample(self, batch_size: int) -> tuple[Any, dict]:
        with self._lock:
            if not len(self._storage):
                raise RuntimeError("Cannot sample from an empty replay buffer: extend or add data first.")
            index, info = self._sampler.sample(self._storage, batch_size)
            if self._sample_unit is not None:
                index, info = self._sample_unit.expand(index, info, self._storage)
            info["index"] = index
            if self._stacked_get and not is_int(index):
                data = self._storage.get_stacked(index)  # type: ignore[attr-defined]  # hasattr-checked in __init__
            else:
                data = self._storage._get_sampled(index)
                if self._get_collate and not is_int(index):
                    data = self._collate_fn(data)
        if self._pin_memory:
            data = data.pin_memory()
        if self._transform:
            data = self._transform(data)
        return data, info

    def sample(self, batch_size: int | None = None, return_info: bool = False) -> Any:
        """Draws a batch.

        Args:
            batch_size: the number of items; defaults to the constructor's ``batch_size``.
            return_info: also return the info dict (``"index"`` and sampler outputs).

        Returns:
            The batch, or ``(batch, info)`` if ``return_info``.
        """
        if batch_size is None:
            batch_size = self._batch_size
            if batch_size is None:
                raise RuntimeError("sample() needs a batch_size: pass one here or to the constructor.")
            prefetched = self._prefetch_cap > 0
        else:
            if batch_size < 0:
                raise ValueError(f"sample() batch_size must be a non-negative integer, got {batch_size!r}.")
            prefetched = self._prefetch_cap > 0 and batch_size == self._batch_size
        data, info = self._prefetch(batch_size) if prefetched else self._sample(batch_size)
        return (data, info) if return_info else data

    def _sample_tagged(self, batch_size: int) -> tuple[Any, dict, bool]:
        # A prefetched batch remembers whether it ended the sampler's epoch: by the time it is popped,
        # the sampler has moved on (ran_out describes the newest prefetched batch, not this one).
        with self._lock:
            data, info = self._sample(batch_size)
            return data, info, self._sampler.ran_out

    def _prefetch_tagged(self, batch_size: int) -> tuple[Any, dict, bool]:
        if self._prefetch_executor is None:
            self._prefetch_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tdrl-rb-prefetch")
        queue = self._prefetch_queue
        with self._prefetch_lock:  # several sampling threads share the queue: pop under the lock
            while len(queue) < self._prefetch_cap:
                queue.append(self._prefetch_executor.submit(self._sample_tagged, batch_size))
            future = queue.popleft()
        return future.result()

    def _prefetch(self, batch_size: int) -> tuple[Any, dict]:
        data, info, _ = self._prefetch_tagged(batch_size)
        return data, info

    def __iter__(self) -> Iterator[Any]:
        if self._batch_size is None:
            raise RuntimeError("Iterating over a replay buffer needs a batch_size set at construction.")
        if self._sampler.ran_out:
            self._sampler.ran_out = False  # type: ignore[misc]  # a sampler that runs out has a ran_out setter
        if self._prefetch_cap > 0:
            # One epoch: stop after the batch that ended it; batches prefetched past it stay queued
            # and open the next iteration.
            while True:
                data, _, ended = self._prefetch_tagged(self._batch_size)
                yield data
                if ended:
                    return
        while not self._sampler.ran_out:
            yield self.sample()

    def __getitem__(self, index: Any) -> Any:
        with self._lock:
            data = self._storage.get(index)
        if not is_int(index) and self._get_collate:
            data = self._collate_fn(data)
        if self._transform:
            data = self._transform(data)
        return data

    def empty(self, empty_write_count: bool = True) -> None:
        """Removes every item (and resets the cursor and sampler state)."""
        with self._lock:
            self._drain_prefetch()
            self._writer._empty(empty_write_count)
            self._sampler._empty()
            self._storage._empty()

    def _drain_prefetch(self) -> None:
        while self._prefetch_queue:
            with contextlib.suppress(Exception):
                self._prefetch_queue.popleft().result()

    # ---- transforms ----------------------------------------------------------------------------
    def append_transform(self, transform: Callable, *, invert: bool = False) -> ReplayBuffer:
        """Appends a transform applied to sampled data (its ``inv``, if any, to written data)."""
        self._transform.append(transform, invert=invert)
        return self

    def insert_transform(self, index: int, transform: Callable, *, invert: bool = False) -> ReplayBuffer:
        """Inserts a transform at position ``index`` of the transform chain."""
        self._transform.insert(index, transform, invert=invert)
        return self

    # ---- state ---------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Storage, sampler and writer states plus the batch size."""
        with self._lock:
            return {
                "_storage": self._storage.state_dict(),
                "_sampler": self._sampler.state_dict(),
                "_writer": self._writer.state_dict(),
                "_transforms": self._transform.state_dict(),
                "_batch_size": self._batch_size,
            }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`."""
        with self._lock:
            self._drain_prefetch()
            self._storage.load_state_dict(state_dict["_storage"])
            self._sampler.load_state_dict(state_dict["_sampler"])
            self._writer.load_state_dict(state_dict["_writer"])
            self._transform.load_state_dict(state_dict.get("_transforms", {}))
            self._batch_size = state_dict.get("_batch_size", self._batch_size)

    def dumps(self, path: str | Path, *, allow_pickle_unsafe: bool = False) -> None:
        """Writes an atomic, checksummed checkpoint of the buffer under ``path`` (see :mod:`checkpointers`).

        Only the filled part of the storage is written. A crash while writing leaves the previous checkpoint
        at ``path`` loadable; a full disk raises :class:`~tdrl._utils.safe_files.CheckpointWriteError`.

        Args:
            path: the checkpoint directory.
            allow_pickle_unsafe: let a list storage pickle items that are not tensors, numbers, strings,
                lists or dicts (loading them then needs ``allow_pickle_unsafe=True`` too).
        """
        with self._lock:
            write_checkpoint(
                path,
                functools.partial(self._dump_into, allow_pickle_unsafe=allow_pickle_unsafe),
                needed=self._storage._dump_nbytes(),
            )

    def _dump_into(self, directory: Path, *, allow_pickle_unsafe: bool = False) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._storage._dump_checkpointed(directory / "storage", allow_pickle_unsafe=allow_pickle_unsafe)
        (directory / "sampler").mkdir()
        self._sampler.dumps(directory / "sampler")
        self._writer.dumps(directory / "writer")
        transforms = self._transform.state_dict()
        if not allow_pickle_unsafe:
            check_plain(transforms, "the buffer's transform state")
        save_tensors(directory / "transforms.pt", transforms)
        save_json(
            directory / "buffer_metadata.json", {"batch_size": self._batch_size, "type": type(self).__name__}
        )

    def loads(self, path: str | Path, *, allow_pickle_unsafe: bool = False) -> None:
        """Loads a checkpoint written by :meth:`dumps`, after checking every file's size and checksum.

        Nothing is unpickled unless ``allow_pickle_unsafe=True`` (which can run arbitrary code: only for
        checkpoints you trust).

        Raises:
            FileNotFoundError: no checkpoint at ``path``.
            CheckpointError: a file is missing, truncated or corrupted (named in the message), or holds
                pickled data without the opt-in.
        """
        self._load_from(resolve_checkpoint(path), allow_pickle_unsafe=allow_pickle_unsafe)

    def dump(self, path: str | Path, *, allow_pickle_unsafe: bool = False) -> None:
        """Alias of :meth:`dumps`."""
        self.dumps(path, allow_pickle_unsafe=allow_pickle_unsafe)

    def load(self, path: str | Path, *, allow_pickle_unsafe: bool = False) -> None:
        """Alias of :meth:`loads`."""
        self.loads(path, allow_pickle_unsafe=allow_pickle_unsafe)

    def _load_from(self, directory: Path, *, allow_pickle_unsafe: bool = False) -> None:
        with self._lock:
            self._drain_prefetch()
            self._storage._load_checkpointed(directory / "storage", allow_pickle_unsafe=allow_pickle_unsafe)
            self._sampler.loads(directory / "sampler")
            self._writer.loads(directory / "writer")
            self._transform.load_state_dict(
                load_tensors(directory / "transforms.pt", allow_pickle_unsafe=allow_pickle_unsafe)
            )
            self._batch_size = load_json(directory / "buffer_metadata.json")["batch_size"]

    # ---- pickling ------------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_lock"] = None
        state["_prefetch_executor"] = None
        state["_prefetch_queue"] = None
        state["_prefetch_lock"] = None
        state["_rng"] = None
        for name in self._COMPILE_OPAQUE:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = contextlib.nullcontext() if self._compilable else threading.RLock()
        self._prefetch_queue = deque()
        self._prefetch_lock = threading.Lock()
        self._wrap_for_compile()

    def __del__(self) -> None:
        executor = getattr(self, "_prefetch_executor", None)
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(\n    storage={self._storage},\n    sampler={self._sampler},\n"
            f"    writer={self._writer},\n    batch_size={self._batch_size},\n    collate_fn={self._collate_fn},\n"
            f"    transform={self._transform})"
        )
