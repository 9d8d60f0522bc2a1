"""Sample units: what each anchor a sampler draws expands into (:class:`Transition`, :class:`Sequence`).

A replay buffer built with ``sample_unit=...`` calls ``unit.expand(index, info, storage)`` right after its
sampler drew the anchors and before the storage is read, so the expanded indices are the ones the batch is
made of and the ones reported in ``info["index"]``.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Literal

import torch
from tensordict import is_tensor_collection
from tensordict.utils import NestedKey

from tdrl.data.replay_buffers.samplers._storage_read import last_row
from tdrl.data.replay_buffers.storages.tensor import TensorStorage

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["SampleUnit", "Sequence", "Transition"]

EpisodeBoundary = Literal["pad", "stop", "include_reset"]


class SampleUnit(abc.ABC):
    """Expands sampled anchor indices into the record indices of a batch.

    Subclasses implement :meth:`expand`. A unit that changes the number of records keeps the per-anchor
    entries of ``info`` (e.g. priority weights) aligned with the index it returns, and reports what it did
    through new ``info`` entries; per-record tensors become keys of TensorDict samples.

    Examples:
        >>> import torch
        >>> class Twice(SampleUnit):
        ...     def expand(self, index, info, storage):
        ...         return index.repeat_interleave(2), info
        >>> Twice().expand(torch.tensor([3, 5]), {}, None)
        (tensor([3, 3, 5, 5]), {})
    """

    @abc.abstractmethod
    def expand(
        self, index: torch.Tensor | tuple, info: dict[str, Any], storage: Storage
    ) -> tuple[torch.Tensor | tuple, dict[str, Any]]:
        """Returns ``(index, info)`` for the records the anchors ``index`` expand into."""


class Transition(SampleUnit):
    """The identity unit: each anchor is one transition (the behaviour without a ``sample_unit``).

    Examples:
        >>> import torch
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> rb = ReplayBuffer(storage=LazyTensorStorage(10), batch_size=4, sample_unit=Transition())
        >>> _ = rb.extend(torch.arange(10))
        >>> rb.sample().shape
        torch.Size([4])
    """

    def expand(
        self, index: torch.Tensor | tuple, info: dict[str, Any], storage: Storage
    ) -> tuple[torch.Tensor | tuple, dict[str, Any]]:
        return index, info


def _squeeze_flags(done: torch.Tensor, ndim: int) -> torch.Tensor:
    while done.ndim > ndim and done.shape[-1] == 1:
        done = done.squeeze(-1)
    if done.ndim != ndim:
        raise ValueError(
            f"Sequence: the done entry has shape {tuple(done.shape)}, expected [*storage.shape, 1]."
        )
    return done.bool()


class Sequence(SampleUnit):
    """Expands each anchor into a window of ``burn_in + length + bootstrap`` records.

    The window holds ``burn_in`` records before the anchor, the ``length`` records of the learning region
    starting at the anchor and ``bootstrap`` records after it, ``dilation`` storage rows apart. With ``B``
    anchors a sample has ``B * (burn_in + length + bootstrap)`` records. The window never crosses the write
    seam of the ring buffer (between its newest and oldest record); episode ends (``done_key``) follow
    ``episode_boundary``:

    - ``"pad"``: records past the anchor's episode repeat its last (or first) record and are marked invalid;
    - ``"stop"``: the window is shifted back so it ends at the episode end (padding still applies when the
      episode is too short);
    - ``"include_reset"``: episode ends are crossed (only the write seam bounds the window).

    ``info`` gains per-record ``"anchor_index"`` (the anchor each record came from), ``"sequence_id"``,
    ``"step_in_sequence"``, ``"learning_mask"`` (True on the learning region) and ``"validity_mask"``
    (False on padded records); ``info["index"]`` holds the expanded record indices. For storages with more
    than one dim, dim 0 is time and the other coordinates are kept.

    Args:
        length: length of the learning region (> 0).
        episode_boundary: ``"pad"``, ``"stop"`` or ``"include_reset"``. Defaults to ``"pad"``.
        done_key: the end-of-episode entry; ``None`` treats the written span as one trajectory.
            Defaults to ``("next", "done")``.
        burn_in: records before the anchor (never shifts the anchor). Defaults to 0.
        bootstrap: records after the learning region. Defaults to 0.
        dilation: storage rows between consecutive window records (>= 1). Defaults to 1.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> rb = ReplayBuffer(storage=LazyTensorStorage(10), batch_size=2, sample_unit=Sequence(length=3))
        >>> done = torch.zeros(10, 1, dtype=torch.bool)
        >>> done[4] = done[9] = True
        >>> _ = rb.extend(TensorDict({"obs": torch.arange(10.0), ("next", "done"): done}, batch_size=[10]))
        >>> rb.sample()["obs"].shape
        torch.Size([6])
        >>> index, info = Sequence(length=2, burn_in=1, bootstrap=1).expand(torch.tensor([5]), {}, rb.storage)
        >>> index.tolist(), info["learning_mask"].tolist(), info["validity_mask"].tolist()
        ([5, 5, 6, 7], [False, True, True, False], [False, True, True, True])
    """

    def __init__(
        self,
        length: int,
        episode_boundary: EpisodeBoundary = "pad",
        done_key: NestedKey | None = ("next", "done"),
        burn_in: int = 0,
        bootstrap: int = 0,
        dilation: int = 1,
    ) -> None:
        if length <= 0:
            raise ValueError(f"Sequence: length must be strictly positive, got {length}.")
        if episode_boundary not in ("pad", "stop", "include_reset"):
            raise ValueError(
                f"Sequence: unknown episode_boundary {episode_boundary!r}; expected 'pad', 'stop' or 'include_reset'."
            )
        for name, value in (("burn_in", burn_in), ("bootstrap", bootstrap)):
            if value < 0:
                raise ValueError(f"Sequence: {name} must be non-negative, got {value}.")
        if dilation < 1:
            raise ValueError(f"Sequence: dilation must be strictly positive, got {dilation}.")
        if done_key is not None and not isinstance(done_key, str):
            done_key = tuple(done_key)  # lists / omegaconf sequences from configs
        self.length = length
        self.episode_boundary = episode_boundary
        self.done_key = done_key
        self.burn_in = burn_in
        self.bootstrap = bootstrap
        self.dilation = dilation

    def _check_storage(self, storage: Storage) -> None:
        if not isinstance(storage, TensorStorage):
            raise TypeError(
                f"Sequence needs a TensorStorage (e.g. LazyTensorStorage) holding TensorDicts, "
                f"got {type(storage).__name__}."
            )
        content = getattr(storage, "_storage", None)
        if content is not None and not is_tensor_collection(content):
            raise TypeError(
                f"Sequence reads the {self.done_key!r} entry of the storage, which holds a "
                f"{type(content).__name__}, not a TensorDict."
            )

    def _distances(
        self, storage: Storage, anchor: torch.Tensor, device: torch.device
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Rows from each anchor back to its trajectory start and forward to its end; the written length."""
        written = storage.shape[0]
        full = bool(storage._is_full)
        newest = last_row(getattr(storage, "_last_cursor", None), storage)
        newest = written - 1 if newest is None else newest % written
        oldest = (newest + 1) % written if full else 0
        lanes = tuple(storage.shape[1:])
        crosses = self.episode_boundary == "include_reset" or self.done_key is None
        if crosses and not lanes:
            anchor_time = anchor[:, 0] if anchor.ndim == 2 else anchor
            return self._window_distances(None, (anchor_time - oldest) % written, oldest, written)
        if crosses:
            done = torch.zeros((written, *lanes), dtype=torch.bool, device=device)
        else:
            done = _squeeze_flags(storage[:].get(self.done_key).to(device), storage.ndim)
        anchor_time = anchor[:, 0] if anchor.ndim == 2 else anchor
        chrono = (anchor_time - oldest) % written
        if not lanes:
            return self._window_distances(done, chrono, oldest, written)
        order = (oldest + torch.arange(written, device=device)) % written  # chronological -> physical
        ends = done[order].clone()
        ends[-1] = True  # the newest record ends its trajectory (write seam)
        starts = torch.zeros_like(ends)
        starts[0] = True
        starts[1:] = ends[:-1]
        pos = torch.arange(written, device=device).view(-1, *([1] * len(lanes))).expand_as(ends)
        big = torch.full_like(pos, written)
        next_end = torch.where(ends, pos, big).flip(0).cummin(0).values.flip(0)
        last_start = torch.where(starts, pos, torch.full_like(pos, -1)).cummax(0).values
        lane_flat = torch.tensor(0, device=device)
        for d, size in enumerate(lanes):
            lane_flat = lane_flat * size + anchor[:, 1 + d]
        next_end, last_start = next_end.reshape(written, -1), last_start.reshape(written, -1)
        to_stop, from_start = next_end[chrono, lane_flat] - chrono, chrono - last_start[chrono, lane_flat]
        return from_start, to_stop, written

    def _window_distances(
        self, done: torch.Tensor | None, chrono: torch.Tensor, oldest: int, written: int
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        # Only the rows a window can reach matter: distances are capped at the window's span, so each
        # anchor reads 2 * span + 1 done flags (O(batch * span), whatever the storage size).
        span = self.dilation * (self.burn_in + self.length + self.bootstrap - 1)
        pos = chrono.unsqueeze(1) + torch.arange(-span, span + 1, device=chrono.device)
        inside = (pos >= 0) & (pos < written)
        ends = (pos == written - 1) | (
            pos == -1
        )  # the write seam ends a trajectory; before the oldest row too
        if done is not None:
            ends |= done[(pos.clamp(0, written - 1) + oldest) % written] & inside
        forward = ends[:, span:]
        capped = torch.full_like(chrono, span)
        to_stop = torch.where(forward.any(1), forward.int().argmax(1), capped)
        if span == 0:
            return torch.zeros_like(chrono), to_stop, written
        backward = ends[:, :span].flip(1)  # offsets -1, -2, ...
        from_start = torch.where(backward.any(1), backward.int().argmax(1), capped)
        return from_start, to_stop, written

    def expand(
        self, index: torch.Tensor | tuple, info: dict[str, Any], storage: Storage
    ) -> tuple[torch.Tensor | tuple, dict[str, Any]]:
        self._check_storage(storage)
        anchor = torch.stack(index, -1) if isinstance(index, tuple) else index.clone()
        multi = storage.ndim > 1
        if multi and (anchor.ndim != 2 or anchor.shape[-1] != storage.ndim):
            raise RuntimeError(
                f"Sequence: expected anchors of shape [batch, {storage.ndim}], got {tuple(anchor.shape)}."
            )
        device = anchor.device
        n_anchors = anchor.shape[0]
        total = self.burn_in + self.length + self.bootstrap
        out: dict[str, Any] = {}
        for key, value in info.items():
            tensor = torch.as_tensor(value)
            out[key] = value if tensor.ndim == 0 else tensor.repeat_interleave(total, dim=0)
        steps = torch.arange(total, device=device)
        out["sequence_id"] = torch.arange(n_anchors, device=device).repeat_interleave(total)
        out["step_in_sequence"] = steps.repeat(n_anchors)
        out["learning_mask"] = ((steps >= self.burn_in) & (steps < self.burn_in + self.length)).repeat(
            n_anchors
        )
        out["anchor_index"] = anchor.repeat_interleave(total, dim=0)
        offset = ((steps - self.burn_in) * self.dilation).unsqueeze(0).expand(n_anchors, total)
        from_start, to_stop, written = self._distances(storage, anchor, device)
        anchor_time = anchor[:, 0] if multi else anchor
        if self.episode_boundary == "stop":
            shortfall = self.dilation * (self.length + self.bootstrap - 1) - to_stop
            shift = torch.minimum(shortfall.clamp_min(0), from_start)
            anchor_time = anchor_time - shift
            to_stop, from_start = to_stop + shift, from_start - shift
        lo, hi = -from_start.unsqueeze(1), to_stop.unsqueeze(1)
        out["validity_mask"] = ((offset <= hi) & (offset >= lo)).flatten()
        rows = (anchor_time.unsqueeze(1) + torch.maximum(torch.minimum(offset, hi), lo)) % written
        if multi:
            lanes = anchor[:, 1:].unsqueeze(1).expand(n_anchors, total, storage.ndim - 1)
            coords = torch.cat([rows.unsqueeze(-1), lanes], -1).flatten(0, 1)
            return tuple(coords.unbind(-1)), out
        return rows.flatten(), out

    def __repr__(self) -> str:
        return (
            f"Sequence(length={self.length}, episode_boundary={self.episode_boundary!r}, done_key={self.done_key!r}, "
            f"burn_in={self.burn_in}, bootstrap={self.bootstrap}, dilation={self.dilation})"
        )
