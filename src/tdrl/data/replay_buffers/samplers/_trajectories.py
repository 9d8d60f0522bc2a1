"""Trajectory boundaries of a replay-buffer storage, maintained incrementally.

Conventions (TorchRL's ``find_start_stop_traj``): time runs along storage dim 0, the other storage
dims are independent "columns" (e.g. environments). A row ``t`` ends a trajectory in a column when

* its end flag is set (``end_key`` signal), or its trajectory id differs from row ``t + 1``'s
  (``traj_key`` signal; in a full ring buffer row ``T - 1`` is compared with row ``0``);
* it is the last filled row of a storage that is not full;
* it is the row under the write cursor of a full storage (what followed was overwritten);
* it is the last row of a column of a full storage that has no end at all.

Starts follow the previous end of the same column (wrapping around), so in a full storage a
trajectory may start near the end and continue at row 0 (``start > stop``).

The *raw* ends (the first bullet) are kept as a sorted tensor of keys ``column << 40 | row``. A
write only changes the raw ends of the written rows and of the rows just before them, so the
index re-reads the trajectory signal of those rows only and patches the key set: after a write of
``k`` rows the cost is ``O(k + #trajectories)``, and with no write in between, sampling reuses
the cached boundaries at no cost.
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import torch
from tensordict.utils import NestedKey

from tdrl.data.replay_buffers.samplers._storage_read import last_row, read_entry

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["Boundaries", "SignalKind", "TrajectoryIndex", "boundaries_from_signal"]

_SHIFT = 40
_ROW_MASK = (1 << _SHIFT) - 1

SignalKind = Literal["trajectory", "end"]

# Boundary versions are unique process-wide, so a cache keyed on a version never matches
# boundaries computed after a reset.
_VERSIONS = itertools.count(1)


class Boundaries(NamedTuple):
    """Inclusive trajectory ``start`` / ``stop`` coordinates (``[M, ndim]``) and ``lengths`` (``[M]``).

    ``stop_keys`` (sorted ``column << 40 | stop_row``) locate the trajectory holding a position;
    ``len0`` is the filled length along dim 0, ``col_shape`` the shape of the other storage dims,
    and ``version`` changes whenever the boundaries do.
    """

    start: torch.Tensor
    stop: torch.Tensor
    lengths: torch.Tensor
    stop_keys: torch.Tensor
    len0: int
    col_shape: tuple[int, ...]
    version: int

    def columns(self) -> torch.Tensor:
        """Flat column (index over the non-time storage dims) of each trajectory."""
        return self.stop_keys >> _SHIFT

    def trajectory_of(self, row: torch.Tensor, col: torch.Tensor) -> torch.Tensor:
        """Index (into ``start``/``stop``) of the trajectory holding each position ``(row, col)``."""
        keys = self.stop_keys
        pos = torch.bucketize((col << _SHIFT) | row, keys)
        pos = pos.clamp_max(keys.numel() - 1)
        # Past the column's last stop: the position belongs to the column's wrapping trajectory,
        # i.e. the column's first one.
        past = (keys[pos] >> _SHIFT) != col
        if bool(past.any()):
            first = torch.bucketize(col[past] << _SHIFT, keys)
            pos = pos.clone()
            pos[past] = first
        return pos


def _unravel_cols(col: torch.Tensor, col_shape: tuple[int, ...]) -> list[torch.Tensor]:
    if not col_shape:
        return []
    return list(torch.unravel_index(col, col_shape))


def _boundaries_from_keys(
    raw_keys: torch.Tensor,
    *,
    len0: int,
    col_shape: tuple[int, ...],
    full: bool,
    cursor: int | None,
    version: int,
) -> Boundaries:
    ncols = math.prod(col_shape)
    cols = torch.arange(ncols)
    if not full:
        forced = (cols << _SHIFT) | (len0 - 1)
    elif cursor is not None:
        # every column has an end at the cursor row
        forced = (cols << _SHIFT) | cursor
    else:
        has_end = torch.zeros(ncols, dtype=torch.bool)
        has_end[raw_keys >> _SHIFT] = True
        forced = (cols[~has_end] << _SHIFT) | (len0 - 1)
    keys = torch.unique(torch.cat([raw_keys, forced]))
    col = keys >> _SHIFT
    stop_t = keys & _ROW_MASK
    new_col = col[1:] != col[:-1]
    first = torch.cat([torch.ones(1, dtype=torch.bool), new_col])
    last = torch.cat([new_col, torch.ones(1, dtype=torch.bool)])
    prev_t = torch.cat([stop_t[:1], stop_t[:-1]])
    prev_t[first] = stop_t[last]
    start_t = (prev_t + 1) % len0
    lengths = stop_t - start_t + 1
    lengths = torch.where(lengths <= 0, lengths + len0, lengths)
    other = _unravel_cols(col, col_shape)
    start = torch.stack([start_t, *other], -1)
    stop = torch.stack([stop_t, *other], -1)
    return Boundaries(start, stop, lengths, keys, len0, col_shape, version)


def _raw_end_keys(
    rows: torch.Tensor, here: torch.Tensor, after: torch.Tensor | None, kind: SignalKind
) -> torch.Tensor:
    raw = here if kind == "end" or after is None else here != after
    r, c = raw.nonzero(as_tuple=True)
    return (c << _SHIFT) | rows[r]


def _as_columns(signal: torch.Tensor, n_rows: int, ncols: int, kind: SignalKind, key: Any) -> torch.Tensor:
    signal = signal.reshape(n_rows, ncols, -1)
    if kind == "end":
        return signal.bool().any(-1)
    if signal.shape[-1] != 1:
        raise RuntimeError(
            f"trajectory ids under {key!r} must hold one value per step, got {signal.shape[-1]} per step."
        )
    return signal[..., 0]


def boundaries_from_signal(signal: torch.Tensor, *, kind: SignalKind, at_capacity: bool) -> Boundaries:
    """Boundaries of a whole ``[T, *B]`` signal (trajectory ids or end flags), as TorchRL's
    ``find_start_stop_traj(..., cursor=None)``.

    Examples:
        >>> ids = torch.tensor([5, 5, 5, 0, 0, 1, 1, 1, 5, 5])
        >>> b = boundaries_from_signal(ids, kind="trajectory", at_capacity=True)
        >>> b.start[:, 0], b.stop[:, 0], b.lengths
        (tensor([8, 3, 5]), tensor([2, 4, 7]), tensor([5, 2, 3]))
    """
    signal = torch.as_tensor(signal)
    if signal.ndim == 0 or signal.shape[0] == 0:
        raise RuntimeError("Cannot recover trajectory boundaries from an empty or 0-d signal.")
    len0, col_shape = signal.shape[0], tuple(signal.shape[1:])
    sig = _as_columns(signal, len0, math.prod(col_shape), kind, "signal")
    rows = torch.arange(len0)
    if kind == "trajectory":
        if not at_capacity:
            rows = rows[:-1]
        keys = _raw_end_keys(rows, sig[rows], sig[(rows + 1) % len0], kind)
    else:
        keys = _raw_end_keys(rows, sig, None, kind)
    keys, _ = keys.sort()
    return _boundaries_from_keys(keys, len0=len0, col_shape=col_shape, full=at_capacity, cursor=None, version=next(_VERSIONS))


def _storage_full(storage: Storage) -> bool:
    full = getattr(storage, "_is_full", None)
    if full is None:
        return len(storage) >= storage.max_size
    return bool(full)


class TrajectoryIndex:
    """Cached, incrementally refreshed :class:`Boundaries` of one storage and one signal key.

    Writes are reported with :meth:`mark` (rows along dim 0, or ``None`` for "unknown: rebuild").
    Rows appended since the last call are picked up from the storage length even if unreported.

    Examples:
        >>> from tensordict import TensorDict
        >>> class Fake:
        ...     max_size, ndim, _is_full, _last_cursor = 8, 1, False, None
        ...     _storage = TensorDict({"traj": torch.tensor([0, 0, 1, 1, 1, 2])}, [6])
        ...     shape = torch.Size([6])
        ...     def __len__(self): return 6
        >>> b = TrajectoryIndex().boundaries(Fake(), kind="trajectory", keys=["traj"])
        >>> b.start[:, 0], b.lengths
        (tensor([0, 2, 5]), tensor([2, 3, 1]))
    """

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forgets everything; the next :meth:`boundaries` call rebuilds from the storage."""
        self._storage_ref: weakref.ref | None = None
        self._source: tuple | None = None
        self._keys = torch.zeros(0, dtype=torch.long)
        self._len0 = 0
        self._col_shape: tuple[int, ...] | None = None
        self._full = False
        self._dirty: list[torch.Tensor] = []
        self._stale = True
        self._cached: Boundaries | None = None
        self._cached_state: tuple | None = None
        self._last_row: int | None = None

    def mark(self, rows: torch.Tensor | None) -> None:
        """Records that rows along dim 0 were (over)written; ``None`` forces a full rebuild."""
        if rows is None:
            self._stale = True
            return
        if rows.numel():
            self._last_row = int(rows[-1])
            if not self._stale:
                self._dirty.append(rows)

    def _cursor(self, storage: Storage) -> int | None:
        row = last_row(getattr(storage, "_last_cursor", None), storage)
        return self._last_row if row is None else row

    def _needs_rebuild(self, storage: Storage, source: tuple, len0: int, col_shape: tuple, full: bool) -> bool:
        same_storage = self._storage_ref is not None and self._storage_ref() is storage
        return (
            self._stale
            or not same_storage
            or source != self._source
            or col_shape != self._col_shape
            or len0 < self._len0
            or (self._full and not full)
        )

    @staticmethod
    def _read(
        storage: Storage, rows: torch.Tensor, ncols: int, kind: SignalKind, keys: Sequence[NestedKey]
    ) -> torch.Tensor:
        if kind == "trajectory":
            return _as_columns(read_entry(storage, keys[0], (rows,)), rows.numel(), ncols, kind, keys[0])
        out = None
        for key in keys:
            try:
                flags = _as_columns(read_entry(storage, key, (rows,)), rows.numel(), ncols, kind, key)
            except KeyError:
                continue
            out = flags if out is None else out | flags
        if out is None:
            raise KeyError(f"none of the end keys {list(keys)} is stored.")
        return out

    def _raw_keys_at(
        self,
        storage: Storage,
        rows: torch.Tensor,
        *,
        len0: int,
        ncols: int,
        full: bool,
        kind: SignalKind,
        keys: Sequence[NestedKey],
    ) -> torch.Tensor:
        if kind == "end":
            return _raw_end_keys(rows, self._read(storage, rows, ncols, kind, keys), None, kind)
        if not full:
            rows = rows[rows + 1 < len0]
        if not rows.numel():
            return torch.zeros(0, dtype=torch.long)
        both = self._read(storage, torch.cat([rows, (rows + 1) % len0]), ncols, kind, keys)
        return _raw_end_keys(rows, both[: rows.numel()], both[rows.numel() :], kind)

    def boundaries(self, storage: Storage, *, kind: SignalKind, keys: Sequence[NestedKey]) -> Boundaries:
        """The current boundaries of ``storage`` from the signal under ``keys``.

        Args:
            storage: the storage to index.

        Keyword Args:
            kind: ``"trajectory"`` (``keys`` holds one key of trajectory ids) or ``"end"`` (end
                flags, OR-ed over the stored ``keys``).
            keys: the signal keys.

        Raises:
            KeyError: the signal is not stored.
        """
        shape = tuple(storage.shape)
        len0, col_shape = shape[0], shape[1:]
        if len0 == 0:
            raise RuntimeError("Cannot sample from an empty storage.")
        full = _storage_full(storage)
        source = (kind, tuple(keys))
        if self._needs_rebuild(storage, source, len0, col_shape, full):
            rows, raw = torch.arange(len0), torch.zeros(0, dtype=torch.long)
        else:
            if len0 > self._len0:
                self._dirty.append(torch.arange(self._len0, len0))
            if not self._dirty and self._cached is not None and self._state(storage, len0, full) == self._cached_state:
                return self._cached
            rows, raw = self._rows_to_refresh(len0, kind)
        if rows.numel():
            new = self._raw_keys_at(
                storage, rows, len0=len0, ncols=math.prod(col_shape), full=full, kind=kind, keys=keys
            )
            raw, _ = torch.cat([raw, new]).sort()
        self._keys, self._dirty, self._stale = raw, [], False
        self._storage_ref = weakref.ref(storage)
        self._source, self._len0, self._col_shape, self._full = source, len0, col_shape, full
        state = self._state(storage, len0, full)
        if self._cached is None or state != self._cached_state or rows.numel():
            self._cached = _boundaries_from_keys(
                raw, len0=len0, col_shape=col_shape, full=full, cursor=state[2], version=next(_VERSIONS)
            )
            self._cached_state = state
        return self._cached

    def _state(self, storage: Storage, len0: int, full: bool) -> tuple[int, bool, int | None]:
        return (len0, full, self._cursor(storage) if full else None)

    def _rows_to_refresh(self, len0: int, kind: SignalKind) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows whose raw ends must be recomputed, and the raw keys of all other rows."""
        raw = self._keys
        if not self._dirty:
            return torch.zeros(0, dtype=torch.long), raw
        rows = torch.unique(torch.cat(self._dirty))
        rows = rows[(rows >= 0) & (rows < len0)]
        if kind == "trajectory":
            # row t's end flag compares ids of rows t and t + 1
            rows = torch.unique(torch.cat([rows, (rows - 1) % len0]))
        if 2 * rows.numel() > len0:
            return torch.arange(len0), torch.zeros(0, dtype=torch.long)
        return rows, raw[~torch.isin(raw & _ROW_MASK, rows)]
