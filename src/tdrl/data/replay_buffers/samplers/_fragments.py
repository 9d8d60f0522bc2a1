"""Logical trajectory runs of a storage whose steps are not stored contiguously.

With several collectors writing into one buffer, consecutive steps of a trajectory can land in
non-adjacent storage slots. Each slot carries a trajectory id and a step number; a *run* is a
maximal sequence of steps ``s, s + 1, ...`` of one trajectory, whatever slots hold them.

The per-slot ids and steps are cached and refreshed from the written slots only; the runs (one
sort of the live slots) are recomputed only after a write.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, NamedTuple

import torch
from tensordict.utils import NestedKey

from tdrl.data.replay_buffers.samplers._storage_read import read_entry

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["FragmentIndex", "Runs", "runs_from_records"]


class Runs(NamedTuple):
    """``slots`` ordered by (trajectory, step); run ``r`` is ``slots[offsets[r]:offsets[r] + lengths[r]]``."""

    slots: torch.Tensor
    offsets: torch.Tensor
    lengths: torch.Tensor


def runs_from_records(traj: torch.Tensor, step: torch.Tensor) -> Runs:
    """Runs of consecutive steps per trajectory, from per-slot ids and step numbers.

    Raises:
        RuntimeError: two slots hold the same (trajectory, step) pair.

    Examples:
        >>> runs = runs_from_records(torch.tensor([7, 3, 7, 3, 7]), torch.tensor([1, 0, 0, 1, 3]))
        >>> runs.slots.tolist(), runs.offsets.tolist(), runs.lengths.tolist()
        ([1, 3, 2, 0, 4], [0, 2, 4], [2, 2, 1])
    """
    order = torch.argsort(step, stable=True)
    order = order[torch.argsort(traj[order], stable=True)]
    t, s = traj[order], step[order]
    same_traj = t[1:] == t[:-1]
    duplicate = same_traj & (s[1:] == s[:-1])
    if bool(duplicate.any()):
        at = int(duplicate.nonzero()[0])
        raise RuntimeError(
            f"Found duplicate records for trajectory {int(t[at])} at step {int(s[at])}: trajectory-step "
            "pairs must be unique in the live storage (were trajectory ids reused?)."
        )
    new_run = torch.cat([torch.ones(min(1, t.numel()), dtype=torch.bool), ~same_traj | (s[1:] != s[:-1] + 1)])
    offsets = new_run.nonzero().squeeze(-1)
    lengths = torch.diff(offsets, append=torch.tensor([t.numel()]))
    return Runs(order, offsets, lengths)


def _scalar_ints(value: torch.Tensor, n: int, key: NestedKey) -> torch.Tensor:
    if value.dtype == torch.bool or value.is_floating_point() or value.is_complex():
        raise TypeError(f"key={key!r} must contain integer values, got dtype={value.dtype}.")
    value = value.reshape(n, -1)
    if value.shape[1] != 1:
        raise RuntimeError(f"Expected one value per step under key={key!r}, got shape {tuple(value.shape)}.")
    return value[:, 0].long()


class FragmentIndex:
    """Cached :class:`Runs` of one 1-D storage, refreshed from the reported writes.

    Examples:
        >>> from tensordict import TensorDict
        >>> class Fake:
        ...     ndim = 1
        ...     _storage = TensorDict({"t": torch.tensor([0, 1, 0, 1]), "s": torch.tensor([0, 0, 1, 1])}, [4])
        ...     def __len__(self): return 4
        >>> FragmentIndex().runs(Fake(), "t", "s").lengths.tolist()
        [2, 2]
    """

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forgets everything; the next :meth:`runs` call reads every slot."""
        self._traj = torch.zeros(0, dtype=torch.long)
        self._step = torch.zeros(0, dtype=torch.long)
        self._dirty: list[torch.Tensor] = []
        self._stale = True
        self._runs: Runs | None = None
        self._storage_ref: weakref.ref | None = None
        self._keys: tuple | None = None

    def mark(self, rows: torch.Tensor | None) -> None:
        """Records written slots; ``None`` forces a full re-read."""
        if rows is None:
            self._stale = True
        elif rows.numel() and not self._stale:
            self._dirty.append(rows)

    def _rows_to_read(self, storage: Storage, keys: tuple, n: int) -> torch.Tensor:
        known = self._traj.numel()
        same = self._storage_ref is not None and self._storage_ref() is storage and keys == self._keys
        if self._stale or not same or n < known:
            self._traj = torch.zeros(n, dtype=torch.long)
            self._step = torch.zeros(n, dtype=torch.long)
            return torch.arange(n)
        if n > known:
            self._traj = torch.cat([self._traj, torch.zeros(n - known, dtype=torch.long)])
            self._step = torch.cat([self._step, torch.zeros(n - known, dtype=torch.long)])
            self._dirty.append(torch.arange(known, n))
        if not self._dirty:
            return torch.zeros(0, dtype=torch.long)
        rows = torch.unique(torch.cat(self._dirty))
        return rows[(rows >= 0) & (rows < n)]

    def runs(self, storage: Storage, traj_key: NestedKey, step_key: NestedKey) -> Runs:
        """The runs of ``storage`` from the ``traj_key`` ids and ``step_key`` step numbers."""
        if storage.ndim != 1:
            raise ValueError(f"fragmented trajectories need a 1-dimensional storage, got ndim={storage.ndim}.")
        n, keys = len(storage), (traj_key, step_key)
        rows = self._rows_to_read(storage, keys, n)
        self._storage_ref, self._keys, self._dirty, self._stale = weakref.ref(storage), keys, [], False
        if rows.numel():
            try:
                traj = _scalar_ints(read_entry(storage, traj_key, (rows,)), rows.numel(), traj_key)
                step = _scalar_ints(read_entry(storage, step_key, (rows,)), rows.numel(), step_key)
                if bool((step < 0).any()):
                    raise ValueError(f"Step numbers must be non-negative, got {int(step.min())} under {step_key!r}.")
            except Exception:
                self.clear()
                raise
            self._traj[rows], self._step[rows] = traj, step
            self._runs = None
        if self._runs is None:
            try:
                self._runs = runs_from_records(self._traj, self._step)
            except RuntimeError:
                self.clear()
                raise
        return self._runs
