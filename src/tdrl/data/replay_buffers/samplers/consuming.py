"""Uniform sampling that retires each item after it was returned a set number of times."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import torch

from tdrl.data.replay_buffers.samplers._checkpoint import load_state, save_state
from tdrl.data.replay_buffers.samplers.base import EMPTY_STORAGE_ERROR, EpochSampler
from tdrl.data.replay_buffers.utils import is_int

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["ConsumingSampler"]

_CHECKPOINT_FILE = "consuming_sampler.pt"  # TorchRL's name


def check_sample_count(value: Any, name: str) -> int:
    """``value`` as a positive ``int`` (``TypeError`` for a non-integer or a bool, ``ValueError`` below 1)."""
    if isinstance(value, bool) or not (is_int(value) and not isinstance(value, torch.Tensor)):
        raise TypeError(f"{name} must be a positive integer, got {value!r}.")
    if int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


class ConsumingSampler(EpochSampler):
    """Draws live items uniformly (no repeat within a batch) and retires each after ``max_sample_count`` draws.

    A retired (consumed) item is no longer sampled and no longer counted by ``len(buffer)``; its slot
    goes to a free list that the buffer's next writes fill first (oldest consumed first) before the
    writer's cursor moves on. Writing a slot makes it live again with a zero count. A batch holds at
    most the number of live items; :attr:`ran_out` turns ``True`` once none is left, which ends
    iteration over the buffer. ``ReplayBuffer(consume_after_n_samples=n)`` builds one.

    Only 1-dimensional list and tensor storages are supported, without prefetching.

    Args:
        max_sample_count: draws after which an item is consumed. Defaults to ``1``.

    Examples:
        >>> import torch
        >>> from tdrl.data import ConsumingSampler, LazyTensorStorage, ReplayBuffer
        >>> rb = ReplayBuffer(storage=LazyTensorStorage(10), sampler=ConsumingSampler(), batch_size=3)
        >>> rb.extend(torch.arange(4))
        tensor([0, 1, 2, 3])
        >>> len(rb.sample()), len(rb)
        (3, 1)
        >>> len(rb.sample()), len(rb), rb.sampler.ran_out
        (1, 0, True)
    """

    _count: torch.Tensor  # draws per slot
    _live: torch.Tensor  # slots holding an item not yet consumed
    _known: int  # the storage length last seen

    def __init__(self, max_sample_count: int = 1) -> None:
        self.max_sample_count = check_sample_count(max_sample_count, "max_sample_count")
        self._empty()

    # ---- bookkeeping ----------------------------------------------------------------------------
    def _grow(self, capacity: int) -> None:
        have = self._count.numel()
        if capacity > have:
            self._count = torch.cat([self._count, torch.zeros(capacity - have, dtype=torch.long)])
            self._live = torch.cat([self._live, torch.zeros(capacity - have, dtype=torch.bool)])

    def _as_index(self, index: Any) -> torch.Tensor:
        if isinstance(index, tuple):
            raise ValueError(f"{type(self).__name__} supports 1-dimensional storages only (got a tuple index).")
        return torch.as_tensor(index, dtype=torch.long).reshape(-1).cpu()

    def _sync(self, storage: Storage | None) -> None:
        if storage is None:
            return
        if storage.ndim != 1:
            raise ValueError(f"{type(self).__name__} supports 1-dimensional storages only, got ndim={storage.ndim}.")
        n = len(storage)
        self._grow(n)
        if n < self._known:  # the storage was emptied or shrunk
            self._count[n : self._known] = 0
            self._live[n : self._known] = False
        self._known = n

    def _revive(self, index: Any) -> None:
        index = self._as_index(index)
        if not index.numel():
            return
        top = int(index.max()) + 1
        self._grow(top)
        self._count[index] = 0
        self._live[index] = True
        self._known = max(self._known, top)
        self._ran_out = False

    def add(self, index: int | torch.Tensor) -> None:
        self._revive(index)

    def extend(self, index: torch.Tensor) -> None:
        self._revive(index)

    def mark_update(self, index: int | torch.Tensor, *, storage: Storage | None = None) -> None:
        self._sync(storage)
        self._revive(index)

    def _num_sampleable(self, storage: Storage | None = None) -> int:
        """How many items can still be drawn (what ``len(buffer)`` reports)."""
        self._sync(storage)
        return int(self._live[: self._known].sum())

    def _sampleable_count(self, storage: Storage, batch_size: int) -> int:
        return self._num_sampleable(storage)

    def _pop_consumed_indices(self, storage: Storage | None = None, max_count: int | None = None) -> torch.Tensor:
        """Up to ``max_count`` consumed slots, oldest consumed first, taken off the free list."""
        self._sync(storage)
        out: list[int] = []
        while self._free and (max_count is None or len(out) < max_count):
            slot = self._free.popleft()
            # A slot written again since it was consumed is live (or counting) again: not free.
            if slot < self._known and not self._live[slot] and self._count[slot] >= self.max_sample_count:
                out.append(slot)
        return torch.tensor(out, dtype=torch.long)

    # ---- sampling -------------------------------------------------------------------------------
    def sample(self, storage: Storage, batch_size: int) -> tuple[torch.Tensor, dict]:
        self._sync(storage)
        live = self._live[: self._known].nonzero().squeeze(-1)
        if len(storage) == 0 or not live.numel():
            self._ran_out = True
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        pick = torch.randperm(live.numel(), generator=self._rng)[: min(batch_size, live.numel())]
        index = live[pick]
        self._count[index] += 1
        done = self._count[index] >= self.max_sample_count
        self._live[index] = ~done
        self._free.extend(index[done].tolist())
        self._ran_out = not bool(self._live[: self._known].any())
        device = getattr(storage, "device", None)
        if isinstance(device, torch.device) and device.type != "cpu":
            index = index.to(device)
        return index, {}

    # ---- state ----------------------------------------------------------------------------------
    def _empty(self) -> None:
        self._count = torch.zeros(0, dtype=torch.long)
        self._live = torch.zeros(0, dtype=torch.bool)
        self._known = 0
        self._free: deque[int] = deque()
        self._ran_out = False

    def state_dict(self) -> dict[str, Any]:
        """Per-slot draw counts and live flags, the known length, the free list and :attr:`ran_out`."""
        return {
            "max_sample_count": self.max_sample_count,
            "_sample_count": self._count.clone(),
            "_live_mask": self._live.clone(),
            "_known_storage_len": self._known,
            "_free_indices": torch.tensor(list(self._free), dtype=torch.long),
            "_ran_out": self._ran_out,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.max_sample_count = check_sample_count(state_dict["max_sample_count"], "max_sample_count")
        count = torch.as_tensor(state_dict["_sample_count"], dtype=torch.long).reshape(-1).clone()
        live = torch.as_tensor(state_dict["_live_mask"], dtype=torch.bool).reshape(-1).clone()
        known = int(state_dict["_known_storage_len"])
        if count.shape != live.shape or known > count.numel():
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: _sample_count {tuple(count.shape)} and _live_mask "
                f"{tuple(live.shape)} must have one entry per slot (at least _known_storage_len={known})."
            )
        self._count, self._live, self._known = count, live, known
        free = state_dict.get("_free_indices")
        if free is None:  # rebuild: every consumed slot, in slot order
            free = (~live[:known] & (count[:known] >= self.max_sample_count)).nonzero().squeeze(-1)
        self._free = deque(torch.as_tensor(free, dtype=torch.long).reshape(-1).tolist())
        self._ran_out = bool(state_dict["_ran_out"])

    def dumps(self, path: Any) -> None:
        """Writes :meth:`state_dict` under the directory ``path`` (atomically; read back without unpickling)."""
        save_state(path, _CHECKPOINT_FILE, self.state_dict())

    def loads(self, path: Any) -> None:
        """Reads what :meth:`dumps` wrote."""
        self.load_state_dict(load_state(path, _CHECKPOINT_FILE))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_sample_count={self.max_sample_count}, sampleable={self._num_sampleable()})"
