"""Sampling contiguous sub-trajectories: :class:`SliceSampler`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict.utils import NestedKey, unravel_key

from tdrl._utils import logger
from tdrl.data.replay_buffers.samplers._fragments import FragmentIndex, Runs
from tdrl.data.replay_buffers.samplers._storage_read import dim0_rows, read_entry, storage_keys
from tdrl.data.replay_buffers.samplers._trajectories import (
    Boundaries,
    SignalKind,
    TrajectoryIndex,
    boundaries_from_signal,
)
from tdrl.data.replay_buffers.samplers.base import EMPTY_STORAGE_ERROR, Sampler

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["SliceSampler", "slice_positions"]

_AUTO_TRAJ_KEYS: tuple[NestedKey, ...] = (("collector", "traj_ids"), "episode")


def _replace_last(key: NestedKey, name: str) -> NestedKey:
    return name if isinstance(key, str) else (*key[:-1], name)


def slice_positions(
    starts: torch.Tensor, seq: int | torch.Tensor, len0: int, pad_to: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Row positions of slices starting at ``starts`` with lengths ``seq``, wrapped modulo ``len0``.

    Args:
        starts: ``[n]`` first row of each slice (may exceed ``len0``: positions wrap around).
        seq: one length for all slices, or ``[n]`` lengths (all ``>= 1``).
        len0: filled length of storage dim 0.
        pad_to: if given (with tensor ``seq``), every slice is padded to this length by
            repeating its last row.

    Returns:
        ``(rows, slice_id, mask)``: the flat rows, the slice each row belongs to, and (padding
        only) a mask of real rows.

    Examples:
        >>> slice_positions(torch.tensor([8, 2]), 3, 10)[0]
        tensor([8, 9, 0, 2, 3, 4])
        >>> rows, slice_id, _ = slice_positions(torch.tensor([0, 5]), torch.tensor([2, 1]), 10)
        >>> rows, slice_id
        (tensor([0, 1, 5]), tensor([0, 0, 1]))
    """
    n = starts.shape[0]
    if pad_to is not None and isinstance(seq, torch.Tensor):
        offsets = torch.arange(pad_to, device=starts.device)
        mask = offsets.unsqueeze(0) < seq.unsqueeze(1)
        offsets = torch.minimum(offsets.unsqueeze(0), (seq - 1).unsqueeze(1))
        rows = (starts.unsqueeze(1) + offsets).remainder(len0).reshape(-1)
        slice_id = torch.arange(n, device=starts.device).repeat_interleave(pad_to)
        return rows, slice_id, mask.reshape(-1)
    if isinstance(seq, int):
        offsets = torch.arange(seq, device=starts.device)
        rows = (starts.unsqueeze(1) + offsets).remainder(len0).reshape(-1)
        return rows, torch.arange(n, device=starts.device).repeat_interleave(seq), None
    slice_id = torch.arange(n, device=starts.device).repeat_interleave(seq)
    first = seq.cumsum(0) - seq
    offsets = torch.arange(slice_id.numel(), device=starts.device) - first[slice_id]
    return (starts[slice_id] + offsets).remainder(len0), slice_id, None


class SliceSampler(Sampler):
    """Samples ``num_slices`` contiguous slices that never cross a trajectory boundary.

    Trajectories are recovered from stored trajectory ids (``traj_key``) or end-of-trajectory
    flags (``end_key`` / ``end_keys``), along storage dim 0 (time); other storage dims (e.g.
    environments) are independent. A slice may wrap around the end of a full ring buffer when its
    trajectory does. Trajectory boundaries are cached and refreshed incrementally on every write
    the buffer reports (``extend`` / ``add`` / ``mark_update``): only the written rows are re-read,
    so sampling cost does not grow with the buffer size.

    Keyword Args:
        num_slices: number of slices per batch; ``batch_size`` must be divisible by it. Exclusive
            with ``slice_len``.
        slice_len: length of each slice; ``batch_size`` must be divisible by it.
        end_key: key of the end-of-trajectory flags. Defaults to ``("next", "done")``.
        end_keys: several end keys OR-ed together (absent keys are skipped). Exclusive with
            ``end_key``.
        traj_key: key of the trajectory ids. When neither ``traj_key`` nor ``end_key`` is given,
            ``("collector", "traj_ids")`` then ``"episode"`` are looked for, then ``end_key``.
        step_key: key of the per-step step numbers, read when ``fragmented=True``. Defaults to
            ``"step_count"``.
        fragmented: trajectories are interleaved in storage order (several writers): slices follow
            ``(traj_key, step_key)`` adjacency instead of storage adjacency. 1-D storages, sampling
            with replacement, no ``span`` / ``compile``.
        ends: static 1-D end flags of a full storage (requires ``cache_values=True``).
        trajectories: static 1-D trajectory ids of a full storage (requires ``cache_values=True``).
        cache_values: treat the dataset as static between writes: reuse the boundaries without
            checking the storage length / cursor.
        truncated_key: where the slice-end marker is written in the info dict (``True`` at the
            last step of each slice); the sibling ``"done"`` key gets ``stored done | marker`` and
            ``"terminated"`` the stored flags (zeros if absent). ``None`` disables this.
        init_key: when stored, the returned value is ``True`` at the first step of each slice,
            OR-ed with the stored flags. ``None`` disables it.
        strict_length: drop trajectories shorter than the slice length (error if none is long
            enough); ``False`` keeps them and returns shorter slices.
        pad_output: with ``strict_length=False``, pad short slices to full length by repeating
            their last step and write a ``("collector", "mask")`` entry.
        compile: ``True`` or a dict of :func:`torch.compile` kwargs to compile the index builder.
        span: ``True``/int or a ``(left, right)`` pair: slices may start before the trajectory
            start (left) or run past its end (right) and are cut there; ``True`` keeps at least
            one step, an int ``i`` at least ``slice_len - i`` steps.
        use_gpu: accepted for compatibility; the incremental boundary bookkeeping needs no
            accelerator and runs on CPU.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> storage = LazyTensorStorage(100)
        >>> storage.set(torch.arange(20), TensorDict({"traj": torch.arange(20) // 5}, [20]))
        >>> sampler = SliceSampler(num_slices=2, traj_key="traj")
        >>> (index,), info = sampler.sample(storage, 8)
        >>> traj = (index // 5).view(2, 4)
        >>> bool((traj == traj[:, :1]).all()), info[("next", "truncated")].view(2, 4)[:, -1].tolist()
        (True, [True, True])
    """

    # Samplers that draw more candidates than they return set this (kept for TorchRL parity).
    _batch_size_multiplier: int | None = 1
    # PrioritizedSliceSampler does not mark slice starts, as in TorchRL.
    _marks_init = True

    def __init__(
        self,
        *,
        num_slices: int | None = None,
        slice_len: int | None = None,
        end_key: NestedKey | None = None,
        end_keys: Sequence[NestedKey] | None = None,
        traj_key: NestedKey | None = None,
        step_key: NestedKey | None = "step_count",
        fragmented: bool = False,
        ends: torch.Tensor | None = None,
        trajectories: torch.Tensor | None = None,
        cache_values: bool = False,
        truncated_key: NestedKey | None = ("next", "truncated"),
        init_key: NestedKey | None = "is_init",
        strict_length: bool = True,
        pad_output: bool = False,
        compile: bool | dict = False,
        span: bool | int | tuple[bool | int, bool | int] = False,
        use_gpu: torch.device | bool = False,
    ) -> None:
        if (num_slices is None) == (slice_len is None):
            raise TypeError(
                "Either num_slices or slice_len must be not None, and not both. "
                f"Got num_slices={num_slices} and slice_len={slice_len}."
            )
        for name, value in (("num_slices", num_slices), ("slice_len", slice_len)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ValueError(f"{name} must be a positive int, got {value!r}.")
        if fragmented:
            self._check_fragmented(step_key, ends, trajectories, span, compile)
        if end_key is not None and end_keys is not None:
            raise RuntimeError("`end_key` and `end_keys` are exclusive arguments.")
        if pad_output and strict_length:
            raise ValueError("pad_output=True is incompatible with strict_length=True.")
        self.num_slices = num_slices
        self.slice_len = slice_len
        self.step_key = step_key
        self.fragmented = bool(fragmented)
        self.end_keys = tuple(unravel_key(k) for k in end_keys) if end_keys is not None else None
        self.traj_key = traj_key
        self.truncated_key = truncated_key
        self.init_key = init_key
        self.cache_values = bool(cache_values)
        self.strict_length = bool(strict_length)
        self.pad_output = bool(pad_output)
        self.use_gpu = bool(use_gpu)
        self.span = self._check_span(span)
        self._static: Boundaries | None = None
        if trajectories is not None or ends is not None:
            self._init_static(ends, trajectories, traj_key, end_key, end_keys)
        self._traj_key_auto = traj_key is None and end_key is None and end_keys is None
        self._fetch_traj = traj_key is not None or self._traj_key_auto
        self.end_key = ("next", "done") if end_key is None else end_key
        self._index = TrajectoryIndex()
        self._fragments = FragmentIndex()
        self._candidates: dict[int, torch.Tensor] = {}
        self._candidates_version = -1
        self.compile = bool(compile)
        self._positions = slice_positions
        if self.compile:
            self._positions = torch.compile(slice_positions, **(compile if isinstance(compile, dict) else {}))

    def _check_fragmented(self, step_key: Any, ends: Any, trajectories: Any, span: Any, compile: Any) -> None:
        if type(self).sample is not SliceSampler.sample:
            raise ValueError(f"fragmented=True is supported by SliceSampler only, not by {type(self).__name__}.")
        if step_key is None:
            raise ValueError("step_key must be provided when fragmented=True.")
        if ends is not None or trajectories is not None:
            raise ValueError(
                "fragmented=True rebuilds trajectories from traj_key and step_key; the static "
                "ends / trajectories arguments cannot be used with it."
            )
        if span not in (False, 0, (False, False), (0, 0)):
            raise ValueError("span cannot be used with fragmented=True.")
        if compile:
            raise ValueError("compile cannot be used with fragmented=True.")

    @staticmethod
    def _check_span(span: Any) -> tuple[bool | int, bool | int]:
        if isinstance(span, (bool, int)):
            span = (span, span)
        if not (isinstance(span, tuple) and len(span) == 2 and all(isinstance(s, (bool, int)) for s in span)):
            raise ValueError(f"span must be a bool, an int or a (left, right) pair of them, got {span!r}.")
        if any(not isinstance(s, bool) and s < 0 for s in span):
            raise ValueError(f"span values must be >= 0, got {span!r}.")
        return span

    def _init_static(self, ends: Any, trajectories: Any, traj_key: Any, end_key: Any, end_keys: Any) -> None:
        if trajectories is not None and ends is not None:
            raise RuntimeError("trajectories and ends are exclusive arguments.")
        if traj_key is not None or end_key is not None or end_keys is not None:
            raise RuntimeError("`trajectories`/`ends` and `end_key`, `end_keys` or `traj_key` are exclusive arguments.")
        if not self.cache_values:
            raise RuntimeError("To be used, trajectories/ends requires `cache_values` to be set to `True`.")
        if trajectories is not None:
            self._static = boundaries_from_signal(trajectories, kind="trajectory", at_capacity=True)
        else:
            self._static = boundaries_from_signal(torch.as_tensor(ends).bool(), kind="end", at_capacity=True)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_index"] = TrajectoryIndex()
        state["_fragments"] = FragmentIndex()
        state["_candidates"] = {}
        state["_candidates_version"] = -1
        if self.compile:
            state["_positions"] = slice_positions
        return state

    # ---- write notifications ------------------------------------------------------------------
    def _mark(self, rows: torch.Tensor | None) -> None:
        (self._fragments if self.fragmented else self._index).mark(rows)

    def extend(self, index: torch.Tensor) -> None:
        super().extend(index)
        self._mark(dim0_rows(index))

    def add(self, index: int | torch.Tensor) -> None:
        super().add(index)
        self._mark(dim0_rows(index))

    def mark_update(self, index: Any, *, storage: Storage | None = None) -> None:
        super().mark_update(index, storage=storage)
        self._mark(dim0_rows(index, storage))

    # ---- boundaries ---------------------------------------------------------------------------
    def _resolve_traj_key(self, storage: Storage) -> None:
        self._traj_key_auto = False
        keys = storage_keys(storage) or set()
        for candidate in _AUTO_TRAJ_KEYS:
            if unravel_key(candidate) in keys:
                self.traj_key, self._fetch_traj = candidate, True
                return
        self._fetch_traj = False

    def _signal(self) -> tuple[SignalKind, list[NestedKey]]:
        if self._fetch_traj and self.traj_key is not None:
            return "trajectory", [self.traj_key]
        if self.end_keys is not None:
            return "end", list(self.end_keys)
        return "end", [self.end_key]

    def _boundaries(self, storage: Storage) -> Boundaries:
        if self._static is not None:
            return self._static
        if self.cache_values and self._index._cached is not None and not self._index._dirty and not self._index._stale:
            return self._index._cached
        if self._traj_key_auto:
            self._resolve_traj_key(storage)
        tried = []
        for _ in range(2):
            kind, keys = self._signal()
            tried.extend(keys)
            try:
                return self._index.boundaries(storage, kind=kind, keys=keys)
            except KeyError:
                if kind == "trajectory":
                    logger.info("SliceSampler: traj_key %r not found, using end_key %r.", keys[0], self.end_key)
                    self._fetch_traj = False
                else:
                    self._traj_key_auto = self.traj_key is None
                    if self._traj_key_auto:
                        self._resolve_traj_key(storage)
                    if not self._fetch_traj:
                        break
        raise KeyError(
            f"SliceSampler could not find the trajectory signal: tried {tried}; stored keys: "
            f"{sorted(map(str, storage_keys(storage) or []))}. Pass traj_key= or end_key=."
        )

    # ---- sampling -----------------------------------------------------------------------------
    def _adjusted_batch_size(self, batch_size: int) -> tuple[int, int]:
        num_slices, slice_len = self.num_slices, self.slice_len
        if num_slices is not None:
            if batch_size % num_slices != 0:
                raise RuntimeError(
                    f"The batch-size must be divisible by the number of slices, got "
                    f"batch_size={batch_size} and num_slices={num_slices}."
                )
            return batch_size // num_slices, num_slices
        if slice_len is None:  # __init__ requires exactly one of the two
            raise RuntimeError("SliceSampler needs num_slices or slice_len.")
        if batch_size % slice_len != 0:
            raise RuntimeError(
                f"The batch-size must be divisible by the slice length, got "
                f"batch_size={batch_size} and slice_len={slice_len}."
            )
        return slice_len, batch_size // slice_len

    def _long_enough(self, bounds: Boundaries, seq_length: int) -> torch.Tensor:
        """Indices of the trajectories with at least ``seq_length`` steps (cached per version)."""
        if self._candidates_version != bounds.version:
            self._candidates = {}
            self._candidates_version = bounds.version
        candidates = self._candidates.get(seq_length)
        if candidates is None:
            candidates = (bounds.lengths >= seq_length).nonzero().squeeze(-1)
            if not candidates.numel():
                raise RuntimeError(
                    "Did not find a single trajectory with sufficient length (length range: "
                    f"{int(bounds.lengths.min())} - {int(bounds.lengths.max())} / required={seq_length})."
                )
            self._candidates[seq_length] = candidates
        return candidates

    def _sampleable_count(self, storage: Storage, batch_size: int) -> int | torch.Tensor:
        if len(storage) == 0:
            return 0
        seq_length, _ = self._adjusted_batch_size(batch_size)
        try:
            lengths = self._fragment_runs(storage).lengths if self.fragmented else self._boundaries(storage).lengths
        except (KeyError, RuntimeError):
            return 0
        windows = lengths - seq_length + 1
        windows = windows.clamp_min(0) if self.strict_length else torch.where(lengths > 0, windows.clamp_min(1), 0)
        return windows.sum()

    def _prepare(self, storage: Storage, batch_size: int) -> tuple[Boundaries, int, int]:
        """Checks the request and returns ``(boundaries, slice length, number of slices)``."""
        if len(storage) == 0:
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        if self._batch_size_multiplier is not None:
            batch_size = batch_size * self._batch_size_multiplier
        seq_length, num_slices = self._adjusted_batch_size(batch_size)
        bounds = self._boundaries(storage)
        if bounds.start.shape[1] != storage.ndim:
            raise RuntimeError(
                f"Expected the end-of-trajectory signal to be {storage.ndim}-dimensional. "
                f"Got a tensor with shape[1]={bounds.start.shape[1]} instead."
            )
        return bounds, seq_length, num_slices

    def sample(self, storage: Storage, batch_size: int) -> tuple[tuple[torch.Tensor, ...], dict]:
        if self.fragmented:
            return self._sample_fragmented(storage, batch_size)
        bounds, seq_length, num_slices = self._prepare(storage, batch_size)
        if self.strict_length:
            pool = self._long_enough(bounds, seq_length)
            traj_idx = pool[torch.randint(pool.numel(), (num_slices,), generator=self._rng)]
        else:
            traj_idx = torch.randint(bounds.lengths.numel(), (num_slices,), generator=self._rng)
        return self._slices(bounds, traj_idx, seq_length, storage)

    def _span_window(self, lengths: torch.Tensor, seq: int | torch.Tensor, seq_length: int):
        left, right = self.span
        if right is False or right == 0:
            end_point = lengths - seq + 1
        elif right is True:
            # at least one step of the trajectory in every slice
            end_point = lengths
        else:
            if right >= seq_length:
                raise ValueError("The right and left span must be strictly lower than the sequence length")
            # at least seq_length - right steps (TorchRL's documented contract; its code keeps right + 1)
            end_point = lengths - seq + 1 + right
        start_point: int | torch.Tensor
        if left is False or left == 0:
            start_point = 0
        elif left is True:
            start_point = 1 - seq
        else:
            if left >= seq_length:
                raise ValueError("The right and left span must be strictly lower than the sequence length")
            start_point = -left
        return start_point, end_point

    def _slices(
        self, bounds: Boundaries, traj_idx: torch.Tensor, seq_length: int, storage: Storage
    ) -> tuple[tuple[torch.Tensor, ...], dict]:
        """Draws a start inside each chosen trajectory and builds the index and info."""
        lengths = bounds.lengths[traj_idx]
        seq: int | torch.Tensor = seq_length
        if not self.strict_length and bool((lengths < seq_length).any()):
            seq = lengths.clamp_max(seq_length)
        start_point, end_point = self._span_window(lengths, seq, seq_length)
        u = torch.rand(traj_idx.shape[0], generator=self._rng)
        rel = (u * (end_point - start_point)).floor().long() + start_point
        if any(self.span):
            seq_t = torch.as_tensor(seq).expand(rel.shape)
            seq_t = torch.where(rel < 0, seq_t + rel, seq_t)
            rel = rel.clamp_min(0)
            seq_t = torch.minimum(seq_t, lengths - rel)
            if not bool((seq_t == seq_length).all()):
                seq = seq_t
        starts = bounds.start[traj_idx, 0] + rel
        return self._finalize(bounds, starts, bounds.start[traj_idx, 1:], seq, seq_length, storage)

    def _finalize(
        self,
        bounds: Boundaries,
        starts: torch.Tensor,
        cols: torch.Tensor,
        seq: int | torch.Tensor,
        seq_length: int,
        storage: Storage,
    ) -> tuple[tuple[torch.Tensor, ...], dict]:
        pad_to = seq_length if (self.pad_output and isinstance(seq, torch.Tensor)) else None
        rows, slice_id, mask = self._positions(starts, seq, bounds.len0, pad_to)
        index = (rows, *cols[slice_id].unbind(-1))
        return index, self._slice_info(index, starts.shape[0], seq, pad_to, mask, storage)

    def _slice_info(
        self,
        index: tuple[torch.Tensor, ...],
        n: int,
        seq: int | torch.Tensor,
        pad_to: int | None,
        mask: torch.Tensor | None,
        storage: Storage,
    ) -> dict:
        """The slice-end / slice-start markers of ``n`` consecutive slices laid out in ``index``."""
        rows = index[0]
        if pad_to is not None:
            first = torch.arange(n) * pad_to
            last = first + seq - 1
        elif isinstance(seq, int):
            first = torch.arange(n) * seq
            last = first + seq - 1
        else:
            last = seq.cumsum(0) - 1
            first = last - seq + 1
        info: dict = {}
        if self.truncated_key is not None:
            truncated = torch.zeros((rows.shape[0], 1), dtype=torch.bool)
            truncated[last] = True
            done_key = _replace_last(self.truncated_key, "done")
            terminated_key = _replace_last(self.truncated_key, "terminated")
            done = self._stored(storage, done_key, index)
            terminated = self._stored(storage, terminated_key, index)
            info[self.truncated_key] = truncated
            info[done_key] = truncated.clone() if done is None else done | _broadcast_to(truncated, done)
            info[terminated_key] = torch.zeros_like(truncated) if terminated is None else terminated
        if mask is not None:
            info[("collector", "mask")] = mask
        if self._marks_init and self.init_key is not None:
            stored = self._stored(storage, self.init_key, index)
            if stored is not None:
                marker = torch.zeros(rows.shape[0], dtype=torch.bool)
                marker[first] = True
                info[self.init_key] = stored | _broadcast_to(marker, stored)
        return info

    # ---- fragmented trajectories --------------------------------------------------------------
    def _fragment_runs(self, storage: Storage) -> Runs:
        if self._traj_key_auto:
            self._resolve_traj_key(storage)
        # step_key is not None here: __init__ refuses fragmented=True without one.
        if not self._fetch_traj or self.traj_key is None or self.step_key is None:
            raise RuntimeError(
                "fragmented=True requires trajectory ids under traj_key; end-of-trajectory flags alone "
                "cannot reconstruct interleaved trajectories."
            )
        return self._fragments.runs(storage, self.traj_key, self.step_key)

    def _sample_fragmented(self, storage: Storage, batch_size: int) -> tuple[tuple[torch.Tensor, ...], dict]:
        if len(storage) == 0:
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        seq_length, num_slices = self._adjusted_batch_size(batch_size * (self._batch_size_multiplier or 1))
        runs = self._fragment_runs(storage)
        lengths = runs.lengths
        if self.strict_length:
            pool = (lengths >= seq_length).nonzero().squeeze(-1)
            if not pool.numel():
                raise RuntimeError(
                    "Did not find a single fragmented trajectory run with sufficient length (length range: "
                    f"{int(lengths.min())} - {int(lengths.max())} / required={seq_length})."
                )
            run = pool[torch.randint(pool.numel(), (num_slices,), generator=self._rng)]
            seq: int | torch.Tensor = seq_length
        else:
            run = torch.randint(lengths.numel(), (num_slices,), generator=self._rng)
            seq = lengths[run].clamp_max(seq_length)
        room = lengths[run] - seq + 1
        offset = (torch.rand(num_slices, generator=self._rng) * room).floor().long()
        pad_to = seq_length if (self.pad_output and isinstance(seq, torch.Tensor)) else None
        packed, _, mask = slice_positions(runs.offsets[run] + offset, seq, runs.slots.numel(), pad_to)
        index = (runs.slots[packed],)
        return index, self._slice_info(index, num_slices, seq, pad_to, mask, storage)

    @staticmethod
    def _stored(storage: Storage, key: NestedKey, index: tuple[torch.Tensor, ...]) -> torch.Tensor | None:
        try:
            return read_entry(storage, key, index)
        except KeyError:
            return None

    # ---- state --------------------------------------------------------------------------------
    def _empty(self) -> None:
        self._index.clear()
        self._fragments.clear()
        self._candidates = {}

    def dumps(self, path: Any) -> None:
        # Boundaries are a cache rebuilt from the storage: nothing to save.
        return

    def loads(self, path: Any) -> None:
        self._index.clear()

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._index.clear()
        self._fragments.clear()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_slices={self.num_slices}, slice_len={self.slice_len}, "
            f"end_key={self.end_key}, end_keys={self.end_keys}, traj_key={self.traj_key}, "
            f"truncated_key={self.truncated_key}, strict_length={self.strict_length}, "
            f"pad_output={self.pad_output})"
        )


def _broadcast_to(flags: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Reshapes per-row ``flags`` (``[B]`` or ``[B, 1]``) to broadcast against ``like`` (``[B, ...]``)."""
    return flags.reshape(flags.shape[0], *([1] * (like.ndim - 1))).to(like.dtype) if like.ndim else flags

