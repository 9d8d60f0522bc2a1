"""Ensembles: sample from several replay buffers (or read several storages) at once."""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from tdrl.data.replay_buffers.checkpointers import resolve_checkpoint, write_checkpoint
from tdrl.data.replay_buffers.replay_buffers import ReplayBuffer
from tdrl.data.replay_buffers.samplers.base import Sampler
from tdrl.data.replay_buffers.samplers.ensemble import SamplerEnsemble
from tdrl.data.replay_buffers.storages.ensemble import StorageEnsemble
from tdrl.data.replay_buffers.tensordict_buffers import TensorDictReplayBuffer
from tdrl.data.replay_buffers.transforms import BufferTransforms
from tdrl.data.replay_buffers.writers import Writer, WriterEnsemble

__all__ = ["ReplayBufferEnsemble", "StorageEnsemble"]


def _with_buffer_index(data: Any, index: Any, buffer_id: int) -> Any:
    if not isinstance(data, TensorDictBase):
        return data
    index = torch.as_tensor(index)
    if index.ndim > 1:  # multi-dim storages: keep the first coordinate column-wise
        index = index.reshape(index.shape[0], -1)[:, 0]
    batch = data.batch_size
    index_td = TensorDict(
        {"buffer_ids": torch.full(batch, buffer_id, dtype=torch.long), "index": index.reshape(batch)},
        batch_size=batch,
    )
    return data.set("index", index_td)


class ReplayBufferEnsemble(ReplayBuffer):
    """Samples from several replay buffers: each draw picks buffers, then samples each of them.

    ``sample()`` picks ``num_buffer_sampled`` buffers (all of them, in order, with
    ``sample_from_all=True``; else drawn with probabilities ``p``, uniform by default), draws
    ``batch_size // num_buffer_sampled`` items from each and stacks the results into a
    ``[num_buffer_sampled, batch_size // num_buffer_sampled]`` TensorDict (lazily if the buffers' keys
    differ). The ``"index"`` entry becomes a TensorDict with ``"buffer_ids"`` and ``"index"``.
    ``len(ensemble)`` is the number of buffers and ``ensemble[i]`` the i-th buffer.

    Args:
        *rbs: the member buffers.

    Keyword Args:
        storages: alternatively, a :class:`StorageEnsemble`; one buffer is built per storage.
        samplers: with ``storages``: a :class:`SamplerEnsemble` (its drawing strategy is used unless
            given here) or one sampler per storage (default: random).
        writers: with ``storages``: a :class:`WriterEnsemble` or one writer per storage (default: round-robin).
        transform: applied to every stacked sample.
        batch_size: the default batch size.
        collate_fn: merges the per-buffer samples; defaults to a (lazy) stack.
        collate_fns: accepted for TorchRL compatibility (use the member buffers' ``collate_fn``).
        p: buffer probabilities. Defaults to uniform.
        sample_from_all: sample every buffer at each call.
        num_buffer_sampled: number of buffers drawn per call; defaults to all of them.
        generator: a :class:`torch.Generator` for the buffer draws.
        shared: accepted for TorchRL compatibility.

    Examples:
        >>> from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
        >>> rbs = [TensorDictReplayBuffer(storage=LazyTensorStorage(10)) for _ in range(2)]
        >>> _ = rbs[0].extend(TensorDict(a=torch.zeros(10), batch_size=[10]))
        >>> _ = rbs[1].extend(TensorDict(a=torch.ones(10), batch_size=[10]))
        >>> sample = ReplayBufferEnsemble(*rbs, batch_size=6, sample_from_all=True).sample()
        >>> sample.batch_size, sample["a"][:, 0].tolist(), sample["index", "buffer_ids"][:, 0].tolist()
        (torch.Size([2, 3]), [0.0, 1.0], [0, 1])
    """

    def __init__(
        self,
        *rbs: ReplayBuffer,
        storages: StorageEnsemble | None = None,
        samplers: SamplerEnsemble | Sequence[Sampler] | None = None,
        writers: WriterEnsemble | Sequence[Writer] | None = None,
        transform: Callable | None = None,
        batch_size: int | None = None,
        collate_fn: Callable | None = None,
        collate_fns: Sequence[Callable] | None = None,
        p: torch.Tensor | Sequence[float] | None = None,
        sample_from_all: bool = False,
        num_buffer_sampled: int | None = None,
        generator: torch.Generator | None = None,
        shared: bool = False,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"ReplayBufferEnsemble got unexpected keyword arguments: {sorted(kwargs)}.")
        if rbs and storages is not None:
            raise TypeError("Pass either replay buffers or storages=, not both.")
        if not rbs:
            if storages is None:
                raise ValueError("ReplayBufferEnsemble needs replay buffers or a StorageEnsemble.")
            n = len(storages)
            if isinstance(samplers, SamplerEnsemble):  # TorchRL passes the ensembles themselves
                p = samplers._p if p is None and isinstance(samplers._p, torch.Tensor) else p
                sample_from_all = sample_from_all or samplers.sample_from_all
                num_buffer_sampled = samplers._num_buffer_sampled if num_buffer_sampled is None else num_buffer_sampled
                samplers = samplers._samplers
            if isinstance(writers, WriterEnsemble):
                writers = writers._writers
            member_samplers: list[Sampler | None] = list(samplers) if samplers is not None else [None] * n
            member_writers: list[Writer | None] = list(writers) if writers is not None else [None] * n
            rbs = tuple(
                TensorDictReplayBuffer(storage=s, sampler=smp, writer=w)
                for s, smp, w in zip(storages._storages, member_samplers, member_writers)
            )
        self._rbs = list(rbs)
        self._batch_size = batch_size
        self._collate_fn = collate_fn if collate_fn is not None else LazyStackedTensorDict.maybe_dense_stack
        self._transform = BufferTransforms([] if transform is None else [transform])
        n = len(self._rbs)
        self._p = torch.full((n,), 1.0 / n) if p is None else torch.as_tensor(p, dtype=torch.float)
        if self._p.shape != (n,) or not bool((self._p >= 0).all()) or float(self._p.sum()) <= 0:
            raise ValueError(f"p must hold {n} non-negative probabilities, got {p!r}.")
        self.sample_from_all = sample_from_all
        self.num_buffer_sampled = n if num_buffer_sampled is None or sample_from_all else int(num_buffer_sampled)
        self._rng = generator
        self._prefetch_cap = 0
        self._prefetch_queue = deque()
        self._prefetch_lock = threading.Lock()
        self._compilable = False

    def __len__(self) -> int:
        return len(self._rbs)

    def __getitem__(self, index: int) -> ReplayBuffer:
        return self._rbs[index]

    def _pick_buffers(self) -> list[int]:
        if self.sample_from_all:
            return list(range(len(self._rbs)))
        return torch.multinomial(self._p, self.num_buffer_sampled, replacement=True, generator=self._rng).tolist()

    def sample(self, batch_size: int | None = None, return_info: bool = False) -> Any:
        batch_size = self._batch_size if batch_size is None else batch_size
        if batch_size is None:
            raise RuntimeError("sample() needs a batch_size: pass one here or to the constructor.")
        ids = self._pick_buffers()
        if batch_size % len(ids):
            raise ValueError(f"batch_size={batch_size} is not divisible by the {len(ids)} buffers sampled.")
        per = batch_size // len(ids)
        parts = []
        for buffer_id in ids:
            data, info = self._rbs[buffer_id].sample(per, return_info=True)
            parts.append(_with_buffer_index(data, info["index"], buffer_id))
        out = self._collate_fn(parts)
        if self._transform:
            out = self._transform(out)
        if return_info:
            index = out.get("index") if isinstance(out, TensorDictBase) else None
            return out, TensorDict({"index": index}, batch_size=out.batch_size) if index is not None else {}
        return out

    def add(self, data: Any) -> Any:
        raise TypeError("ReplayBufferEnsemble does not take writes: add to its member buffers.")

    def extend(self, data: Any) -> Any:
        raise TypeError("ReplayBufferEnsemble does not take writes: extend its member buffers.")

    def empty(self, empty_write_count: bool = True) -> None:
        for rb in self._rbs:
            rb.empty(empty_write_count)

    def state_dict(self) -> dict[str, Any]:
        return {"rbs": [rb.state_dict() for rb in self._rbs], "_batch_size": self._batch_size}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for rb, sd in zip(self._rbs, state_dict["rbs"]):
            rb.load_state_dict(sd)
        self._batch_size = state_dict.get("_batch_size", self._batch_size)

    def dumps(self, path: str | Path, *, allow_pickle_unsafe: bool = False) -> None:
        """Writes every member buffer into one atomic, checksummed checkpoint under ``path``."""
        write_checkpoint(path, functools.partial(self._dump_into, allow_pickle_unsafe=allow_pickle_unsafe),
                         needed=sum(rb._storage._dump_nbytes() for rb in self._rbs))

    def _dump_into(self, directory: Path, *, allow_pickle_unsafe: bool = False) -> None:
        for i, rb in enumerate(self._rbs):
            rb._dump_into(directory / f"rb{i}", allow_pickle_unsafe=allow_pickle_unsafe)

    def loads(self, path: str | Path, *, allow_pickle_unsafe: bool = False) -> None:
        """Reads a checkpoint written by :meth:`dumps` (verified; nothing unpickled without the opt-in)."""
        directory = resolve_checkpoint(path)
        for i, rb in enumerate(self._rbs):
            rb._load_from(directory / f"rb{i}", allow_pickle_unsafe=allow_pickle_unsafe)

    def __iter__(self) -> Any:
        if self._batch_size is None:
            raise RuntimeError("Iterating over a replay buffer needs a batch_size set at construction.")
        while True:
            yield self.sample()

    def __repr__(self) -> str:
        return f"ReplayBufferEnsemble(num_buffers={len(self._rbs)}, batch_size={self._batch_size}, p={self._p.tolist()})"
