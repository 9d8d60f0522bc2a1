"""Prioritized slices: :class:`PrioritizedSliceSampler`."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import torch
from tensordict.utils import NestedKey

from tdrl._utils import TDRLWarning
from tdrl.data.replay_buffers.samplers._trajectories import Boundaries
from tdrl.data.replay_buffers.samplers.prioritized import PrioritizedSampler
from tdrl.data.replay_buffers.samplers.segment_tree import SumSegmentTree
from tdrl.data.replay_buffers.samplers.slice import SliceSampler

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["PrioritizedSliceSampler"]


class PrioritizedSliceSampler(SliceSampler, PrioritizedSampler):
    r"""Samples slices whose first step is drawn by priority.

    Every stored step has a priority (as in :class:`~tdrl.data.PrioritizedSampler`). A slice
    start is drawn with probability proportional to ``(p + eps) ** alpha`` among the steps that
    can start a slice: the last ``slice_len - 1`` steps of each trajectory cannot (with
    ``strict_length=False``, a trajectory's first step always can; with a right ``span`` fewer
    steps are excluded). ``info["priority_weight"]`` holds the start's importance weight
    ``(q_start / q_min) ** -beta``, repeated over the slice.

    The eligible starts live in a third sum tree, a masked copy of the priority tree: priority
    updates are mirrored into it, and when the trajectory boundaries change only the starts whose
    eligibility changed are rewritten.

    Args:
        max_capacity: capacity of the storage, in items.
        alpha: priority exponent.
        beta: importance-sampling exponent.
        eps: added to raw priorities. Defaults to ``1e-8``.
        dtype: precision of the stored priorities.
        reduction: reduction of per-step priorities in TensorDict buffers.

    Keyword Args:
        num_slices, slice_len, end_key, end_keys: as in :class:`~tdrl.data.SliceSampler`; so are
            ``traj_key``, ``ends``, ``trajectories``, ``cache_values``, ``truncated_key``, ``init_key``,
            ``strict_length`` and ``compile``.
        span: only the right span is supported (a left span is turned off with a warning, as in
            TorchRL).
        max_priority_within_buffer: as in :class:`~tdrl.data.PrioritizedSampler`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> storage = LazyTensorStorage(20)
        >>> storage.set(torch.arange(20), TensorDict({"traj": torch.arange(20) // 10}, [20]))
        >>> sampler = PrioritizedSliceSampler(20, alpha=1.0, beta=1.0, slice_len=4, traj_key="traj")
        >>> sampler.update_priority(torch.arange(20), torch.ones(20))
        >>> sampler.update_priority(torch.tensor([12]), 1000.0)
        >>> (index,), info = sampler.sample(storage, 8)
        >>> index.view(2, 4)[:, 0].tolist(), info["priority_weight"].shape
        ([12, 12], torch.Size([8]))
    """

    _marks_init = False

    def __init__(
        self,
        max_capacity: int,
        alpha: float,
        beta: float,
        eps: float = 1e-8,
        dtype: torch.dtype = torch.float,
        reduction: Literal["max", "min", "median", "mean"] = "max",
        *,
        num_slices: int | None = None,
        slice_len: int | None = None,
        end_key: NestedKey | None = None,
        end_keys: Sequence[NestedKey] | None = None,
        traj_key: NestedKey | None = None,
        ends: torch.Tensor | None = None,
        trajectories: torch.Tensor | None = None,
        cache_values: bool = False,
        truncated_key: NestedKey | None = ("next", "truncated"),
        init_key: NestedKey | None = "is_init",
        strict_length: bool = True,
        compile: bool | dict = False,
        span: bool | int | tuple[bool | int, bool | int] = False,
        max_priority_within_buffer: bool = False,
    ) -> None:
        SliceSampler.__init__(
            self,
            num_slices=num_slices,
            slice_len=slice_len,
            end_key=end_key,
            end_keys=end_keys,
            traj_key=traj_key,
            cache_values=cache_values,
            truncated_key=truncated_key,
            init_key=init_key,
            strict_length=strict_length,
            ends=ends,
            trajectories=trajectories,
            compile=compile,
            span=span,
        )
        PrioritizedSampler.__init__(
            self,
            max_capacity=max_capacity,
            alpha=alpha,
            beta=beta,
            eps=eps,
            dtype=dtype,
            reduction=reduction,
            max_priority_within_buffer=max_priority_within_buffer,
        )
        if self.span[0]:
            warnings.warn(
                f"Left spanning is disabled for {type(self).__name__} and is turned off.",
                TDRLWarning,
                stacklevel=2,
            )
            self.span = (0, self.span[1])

    def _init(self) -> None:
        PrioritizedSampler._init(self)
        self._start_tree = SumSegmentTree(self._max_capacity, dtype=self.dtype)
        self._excluded = torch.zeros(self._max_capacity, dtype=torch.bool)
        self._excluded_idx = torch.zeros(0, dtype=torch.long)
        # What the start tree's mask was computed for; None: the start tree must be rebuilt.
        self._start_key: tuple | None = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_slices={self.num_slices}, slice_len={self.slice_len}, "
            f"end_key={self.end_key}, traj_key={self.traj_key}, truncated_key={self.truncated_key}, "
            f"strict_length={self.strict_length}, alpha={self._alpha}, beta={self._beta}, eps={self._eps})"
        )

    # ---- priorities ---------------------------------------------------------------------------
    def _write_priorities(self, index: torch.Tensor, stored: torch.Tensor) -> None:
        super()._write_priorities(index, stored)
        if self._start_key is not None:
            self._start_tree.write_unchecked(index, stored * ~self._excluded[index])

    def _retransform(self, old_alpha: float, new_alpha: float) -> None:
        super()._retransform(old_alpha, new_alpha)
        self._start_key = None

    def mark_update(self, index: Any, *, storage: Storage | None = None) -> None:
        SliceSampler.mark_update(self, index, storage=storage)

    # ---- eligible starts ----------------------------------------------------------------------
    def _excluded_positions(self, bounds: Boundaries, seq_length: int) -> torch.Tensor:
        """Flat storage positions that cannot start a slice (the tail of each trajectory)."""
        right = self.span[1]
        if right is True:
            tail = 1
        elif right:
            tail = max(seq_length - 1 - right, 0)
        else:
            tail = seq_length - 1
        lengths = bounds.lengths if self.strict_length else bounds.lengths - 1
        count = lengths.clamp(max=tail, min=0)
        traj = torch.arange(count.numel()).repeat_interleave(count)
        back = torch.arange(traj.numel()) - (count.cumsum(0) - count)[traj]
        rows = (bounds.stop[traj, 0] - back) % bounds.len0
        ncols = math.prod(bounds.col_shape)
        cols = bounds.columns()[traj]
        return rows * ncols + cols

    def _refresh_starts(self, bounds: Boundaries, seq_length: int) -> None:
        key = (bounds.version, seq_length)
        if key == self._start_key:
            return
        new = self._excluded_positions(bounds, seq_length)
        leaves = self._sum_tree.leaves()
        if self._start_key is None:
            self._excluded.zero_()
            self._excluded[new] = True
            self._start_tree.rebuild(leaves * ~self._excluded)
        else:
            self._excluded[self._excluded_idx] = False
            self._excluded[new] = True
            changed = torch.unique(torch.cat([self._excluded_idx, new]))
            self._start_tree.write_unchecked(changed, leaves[changed] * ~self._excluded[changed])
        self._excluded_idx = new
        self._start_key = key

    def sample(self, storage: Storage, batch_size: int) -> tuple[tuple[torch.Tensor, ...], dict]:
        bounds, seq_length, num_slices = self._prepare(storage, batch_size)
        n, _, p_min = self._priority_mass(storage)
        self._refresh_starts(bounds, seq_length)
        mass_total = self._start_tree.query(0, n)
        if mass_total <= 0:
            raise RuntimeError(
                f"No step can start a slice of length {seq_length}: every trajectory is shorter, or the "
                "eligible steps all have priority 0."
            )
        mass = torch.rand(num_slices, generator=self._rng, dtype=torch.float64) * mass_total
        flat = self._start_tree.scan_lower_bound(mass, upper=n)
        weight = self._weights(flat, p_min)
        ncols = math.prod(bounds.col_shape)
        rows, col = flat // ncols, flat % ncols
        seq: int | torch.Tensor = seq_length
        if self.span[1] or not self.strict_length:
            stop = bounds.stop[bounds.trajectory_of(rows, col), 0]
            seq = torch.minimum((stop - rows) % bounds.len0 + 1, torch.tensor(seq_length))
            if bool((seq == seq_length).all()):
                seq = seq_length
        cols = torch.stack(list(torch.unravel_index(col, bounds.col_shape)), -1) if bounds.col_shape else col[:, None][:, :0]
        index, info = self._finalize(bounds, rows, cols, seq, seq_length, storage)
        info["priority_weight"] = weight.repeat_interleave(seq)
        return index, info

    # ---- state --------------------------------------------------------------------------------
    def _empty(self) -> None:
        SliceSampler._empty(self)
        PrioritizedSampler._empty(self)

    def state_dict(self) -> dict[str, Any]:
        return PrioritizedSampler.state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        PrioritizedSampler.load_state_dict(self, state_dict)
        self._start_key = None

    def dumps(self, path: Any) -> None:
        PrioritizedSampler.dumps(self, path)

    def loads(self, path: Any) -> None:
        PrioritizedSampler.loads(self, path)
        self._start_key = None
