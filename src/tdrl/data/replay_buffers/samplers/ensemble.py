"""``SamplerEnsemble``: picks member buffers, then samples each with its own sampler."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import torch
from tensordict import TensorDict

from tdrl.data.replay_buffers.samplers.base import Sampler
from tdrl.data.replay_buffers.storages.ensemble import StorageEnsemble, _member_ids
from tdrl.data.replay_buffers.utils import members_rng

__all__ = ["SamplerEnsemble"]


def _as_index(sample: Any) -> torch.Tensor:
    # Multi-dim storages return one index tensor per dim: TorchRL stacks them on the last dim.
    return sample if isinstance(sample, torch.Tensor) else torch.stack(list(sample), -1)


def _merge_infos(infos: list[dict], sizes: list[int]) -> dict:
    """Concatenates per-call infos of one member (per-row tensors joined, other values: the last)."""
    if len(infos) == 1:
        return infos[0]
    out: dict = {}
    for key in set().union(*(info.keys() for info in infos)):
        values: list[Any] = [info.get(key) for info in infos]
        if all(isinstance(v, torch.Tensor) and v.ndim and v.shape[0] == n for v, n in zip(values, sizes)):
            out[key] = torch.cat(values)
        else:
            out[key] = next(v for v in reversed(values) if v is not None)
    return out


class SamplerEnsemble(Sampler):
    """The samplers of a :class:`~tdrl.data.ReplayBufferEnsemble`, with its buffer-drawing strategy.

    ``sample(storage_ensemble, batch_size)`` draws ``num_buffer_sampled`` member ids (all members in
    order with ``sample_from_all=True``; uniformly by default; from ``p`` otherwise), asks each drawn
    member's sampler for ``batch_size // num_buffer_sampled`` indices, and returns a TensorDict of
    batch ``[num_buffer_sampled]`` with ``"index"`` (the member indices, one row per draw) and
    ``"buffer_ids"``, plus the members' infos stacked into a TensorDict. A member drawn twice is
    sampled once for both rows.

    Args:
        *samplers: one sampler per member storage.

    Keyword Args:
        p: member probabilities (normalised), or ``"sampleable"``: weights proportional to what each
            member can serve now (members that cannot serve a batch are never drawn).
        sample_from_all: draw every member at each call (exclusive with ``p``).
        num_buffer_sampled: the members drawn per call; defaults to the number of samplers.

    Examples:
        >>> from tdrl.data import LazyTensorStorage, RandomSampler, StorageEnsemble
        >>> storages = [LazyTensorStorage(4), LazyTensorStorage(4)]
        >>> for s in storages:
        ...     s.set(torch.arange(3), torch.arange(3))
        >>> sampler = SamplerEnsemble(RandomSampler(), RandomSampler(), sample_from_all=True)
        >>> index, info = sampler.sample(StorageEnsemble(*storages), 6)
        >>> index["index"].shape, index["buffer_ids"].tolist(), info.batch_size
        (torch.Size([2, 3]), [0, 1], torch.Size([2]))
    """

    def __init__(
        self,
        *samplers: Sampler,
        p: list[float] | torch.Tensor | Literal["sampleable"] | None = None,
        sample_from_all: bool = False,
        num_buffer_sampled: int | None = None,
    ) -> None:
        if not samplers:
            raise ValueError("SamplerEnsemble needs at least one sampler.")
        bad = [type(s).__name__ for s in samplers if not isinstance(s, Sampler)]
        if bad:
            raise TypeError(f"SamplerEnsemble members must be Sampler instances, got {bad}.")
        if sample_from_all and p is not None:
            raise ValueError("SamplerEnsemble: pass p or sample_from_all=True, not both.")
        if sample_from_all and num_buffer_sampled not in (None, len(samplers)):
            raise ValueError(
                f"SamplerEnsemble: sample_from_all=True samples all {len(samplers)} members, "
                f"got num_buffer_sampled={num_buffer_sampled}."
            )
        if num_buffer_sampled is not None and int(num_buffer_sampled) <= 0:
            raise ValueError(f"num_buffer_sampled must be positive, got {num_buffer_sampled}.")
        self._samplers = list(samplers)
        self.sample_from_all = sample_from_all
        self.p = p
        self.num_buffer_sampled = num_buffer_sampled  # None: all members

    _rng = members_rng("_samplers")

    @property
    def p(self) -> torch.Tensor | str | None:
        """The member probabilities (normalised), ``"sampleable"`` or ``None`` (uniform)."""
        return self._p

    @p.setter
    def p(self, value: Any) -> None:
        if isinstance(value, str):
            if value != "sampleable":
                raise ValueError(f"SamplerEnsemble: the only named p is 'sampleable', got {value!r}.")
            self._p: torch.Tensor | str | None = value
            return
        if value is not None:
            value = torch.as_tensor(value, dtype=torch.float)
            if value.shape != (len(self._samplers),) or bool((value < 0).any()):
                raise ValueError(f"p must hold {len(self._samplers)} non-negative probabilities, got {value.tolist()}.")
            value = value / value.sum().clamp_min(1e-6)
        self._p = value

    @property
    def num_buffer_sampled(self) -> int:
        """Members drawn per call."""
        return len(self._samplers) if self._num_buffer_sampled is None else self._num_buffer_sampled

    @num_buffer_sampled.setter
    def num_buffer_sampled(self, value: int | None) -> None:
        self._num_buffer_sampled = None if value is None else int(value)

    # ---- sampling ------------------------------------------------------------------------------
    def _draw_members(self, storage: StorageEnsemble, sub_batch: int) -> torch.Tensor:
        k = self.num_buffer_sampled
        if self.sample_from_all:
            return torch.arange(len(self._samplers))
        if isinstance(self._p, str):
            counts = torch.tensor(
                [float(s._sampleable_count(m, sub_batch)) for m, s in zip(storage._storages, self._samplers)],
                device=self._rng.device if self._rng is not None else "cpu",
            )
            if not bool(counts.any()):
                raise RuntimeError("SamplerEnsemble: none of the ensemble members can be sampled.")
            return torch.multinomial(counts / counts.sum(), k, True, generator=self._rng)
        if self._p is None:
            return torch.randint(len(self._samplers), (k,), generator=self._rng)
        return torch.multinomial(self._p, k, True, generator=self._rng)

    def _sample_member(self, member: int, storage: Any, n: int) -> tuple[torch.Tensor, dict]:
        # Some samplers (slices) may return fewer rows than asked: ask again for the rest.
        parts: list[torch.Tensor] = []
        infos: list[dict] = []
        remaining = n
        while remaining:
            index, info = self._samplers[member].sample(storage, remaining)
            index = _as_index(index)
            if not index.shape[0] or index.shape[0] > remaining:
                raise RuntimeError(
                    f"SamplerEnsemble: sampler {member} returned {index.shape[0]} indices for a batch of {remaining}."
                )
            parts.append(index)
            infos.append(dict(info))
            remaining -= index.shape[0]
        return torch.cat(parts), _merge_infos(infos, [p.shape[0] for p in parts])

    def sample(self, storage: Any, batch_size: int) -> tuple[TensorDict, TensorDict]:
        if not isinstance(storage, StorageEnsemble):
            raise TypeError(f"SamplerEnsemble needs a StorageEnsemble, got {type(storage).__name__}.")
        if len(storage) != len(self._samplers):
            raise ValueError(f"SamplerEnsemble has {len(self._samplers)} samplers for {len(storage)} storages.")
        k = self.num_buffer_sampled
        if batch_size % k:
            raise ValueError(f"batch_size={batch_size} is not divisible by num_buffer_sampled={k}.")
        sub = batch_size // k
        ids = self._draw_members(storage, sub)
        rows: list[Any] = [None] * ids.numel()
        infos: list[Any] = [None] * ids.numel()
        if self.sample_from_all:
            # One call per member, as TorchRL: a member ending its epoch returns a shorter row.
            for member, (sampler, member_storage) in enumerate(zip(self._samplers, storage._storages)):
                index, info = sampler.sample(member_storage, sub)
                rows[member] = _as_index(index)
                infos[member] = TensorDict.from_dict(dict(info), batch_dims=0) if info else TensorDict()
            return self._pack(rows, ids, infos)
        for member in ids.unique(sorted=True).tolist():
            positions = (ids == member).nonzero().reshape(-1).tolist()
            index, info = self._sample_member(member, storage._storages[member], sub * len(positions))
            info_td = TensorDict.from_dict(info, batch_dims=0) if info else TensorDict()
            for chunk, position in enumerate(positions):
                rows[position] = index[chunk * sub:(chunk + 1) * sub]
                infos[position] = self._info_chunk(info_td, chunk * sub, sub, index.shape[0])
        return self._pack(rows, ids, infos)

    @staticmethod
    def _pack(rows: list[torch.Tensor], ids: torch.Tensor, infos: list[TensorDict]) -> tuple[TensorDict, TensorDict]:
        ragged = any(r.shape != rows[0].shape for r in rows)
        stacked = torch.nested.nested_tensor(rows) if ragged else torch.stack(rows)
        out = TensorDict({"index": stacked, "buffer_ids": ids}, batch_size=[ids.numel()])
        info: Any = torch.stack(infos)  # type: ignore[arg-type]  # torch.stack dispatches TensorDicts
        return out, info

    @staticmethod
    def _info_chunk(info: TensorDict, start: int, size: int, total: int) -> TensorDict:
        chunk = info.clone(False)
        for key, value in info.items(include_nested=True, leaves_only=True):
            if isinstance(value, torch.Tensor) and value.ndim and value.shape[0] == total:
                chunk.set(key, value[start:start + size])
        return chunk

    def can_sample(self, storage: Any, batch_size: int) -> bool:
        """Whether the drawing strategy can serve a batch of ``batch_size`` now."""
        if batch_size % self.num_buffer_sampled:
            return False
        sub = batch_size // self.num_buffer_sampled
        ready = [s.can_sample(m, sub) for m, s in zip(storage._storages, self._samplers)]
        if self.sample_from_all:
            return all(ready)
        if not isinstance(self._p, torch.Tensor):
            return any(ready)
        return any(r and float(p) > 0 for r, p in zip(ready, self._p.tolist()))

    # ---- state ---------------------------------------------------------------------------------
    def _empty(self) -> None:
        for sampler in self._samplers:
            sampler._empty()

    def state_dict(self) -> dict[str, Any]:
        return {str(i): s.state_dict() for i, s in enumerate(self._samplers)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for i, sampler in enumerate(self._samplers):
            sampler.load_state_dict(state_dict[str(i)])

    def dumps(self, path: Any) -> None:
        root = Path(path)
        root.mkdir(parents=True, exist_ok=True)
        for i, sampler in enumerate(self._samplers):
            (root / str(i)).mkdir(exist_ok=True)
            sampler.dumps(root / str(i))

    def loads(self, path: Any) -> None:
        for i, sampler in enumerate(self._samplers):
            sampler.loads(Path(path) / str(i))

    # ---- members -------------------------------------------------------------------------------
    def __getitem__(self, index: Any) -> Any:
        ids = _member_ids(index, len(self._samplers), "SamplerEnsemble")
        if isinstance(ids, int):
            return self._samplers[ids]
        chosen = list(range(len(self._samplers))[ids]) if isinstance(ids, slice) else ids
        p: Any = self._p[chosen] if isinstance(self._p, torch.Tensor) else self._p
        return SamplerEnsemble(
            *(self._samplers[i] for i in chosen),
            p=p,
            sample_from_all=self.sample_from_all,
            num_buffer_sampled=None if self.sample_from_all else self._num_buffer_sampled,
        )

    def __len__(self) -> int:
        return len(self._samplers)

    def __repr__(self) -> str:
        return f"SamplerEnsemble(samplers={self._samplers}, p={self._p}, sample_from_all={self.sample_from_all})"
