"""Hindsight Experience Replay: relabel sampled goals with goals achieved later in the episode.

Andrychowicz et al., "Hindsight Experience Replay", NeurIPS 2017 (https://arxiv.org/abs/1707.01495).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Literal

import torch
from tensordict import NestedKey, TensorDictBase

from tdrl.data.replay_buffers.samplers.base import Sampler
from tdrl.data.replay_buffers.samplers.random import RandomSampler
from tdrl.data.replay_buffers.storages.base import Storage
from tdrl.data.replay_buffers.storages.tensor import TensorStorage
from tdrl.data.replay_buffers.tensordict_buffers import TensorDictReplayBuffer

__all__ = ["HERReplayBuffer", "HindsightStrategy"]


class HindsightStrategy(str, enum.Enum):
    """Where :class:`HERReplayBuffer` takes a relabelled goal from (HER paper, section 4.5).

    ``FUTURE``: an achieved goal of the same or a later step of the episode; ``FINAL``: the episode's
    last achieved goal; ``EPISODE``: any achieved goal of the episode; ``RANDOM``: any achieved goal
    of the buffer.

    Examples:
        >>> HindsightStrategy("future") is HindsightStrategy.FUTURE, HindsightStrategy.FINAL.value
        (True, 'final')
    """

    FUTURE = "future"
    FINAL = "final"
    EPISODE = "episode"
    RANDOM = "random"

    def __str__(self) -> str:  # as enum.StrEnum (TorchRL's base on Python >= 3.11)
        return self.value


def _last_written(storage: Storage, writer: Any) -> int | None:
    """The storage row written last (the newest in-progress episode ends there)."""
    cursor = getattr(storage, "_last_cursor", None)
    if isinstance(cursor, torch.Tensor):
        return int(cursor.reshape(-1)[-1]) if cursor.numel() else None
    if isinstance(cursor, range | list | tuple):
        return int(cursor[-1]) if len(cursor) else None
    if isinstance(cursor, int):
        return cursor
    wcursor = getattr(writer, "_cursor", None)
    return None if wcursor is None else (int(wcursor) - 1) % len(storage)


def _read_key(storage: Storage, key: NestedKey, n: int, rows: Callable[[torch.Tensor], Any]) -> torch.Tensor | None:
    """One entry of the first ``n`` rows (tensor storages: without gathering the other entries)."""
    if isinstance(storage, TensorStorage) and isinstance(storage._storage, TensorDictBase):
        value = storage._storage.get(key, None)
        return None if value is None else value[:n]
    return rows(torch.arange(n)).get(key, None)


class HERReplayBuffer(TensorDictReplayBuffer):
    """A :class:`TensorDictReplayBuffer` that relabels goals at sampling time (HER).

    The first ``int(batch_size * her_ratio)`` items of each sampled batch get their ``goal_key``
    (and ``("next", goal_key)`` if stored) replaced by the ``achieved_goal_key`` of another step,
    chosen by ``strategy``, and their ``reward_key`` recomputed by ``reward_fn``; the other items
    are returned as stored. Episodes end where ``end_key`` (or the ``"terminated"`` entry next to it)
    is set; the newest, unfinished episode ends at the last written row. The storage must be 1-D.

    Args:
        reward_fn: maps the relabelled items (a TensorDict with the new goals) to their reward,
            of shape ``[*batch, 1]`` or ``[*batch]``.

    Keyword Args:
        her_ratio: the fraction of each batch to relabel, in ``[0, 1]``. Defaults to ``0.8``.
        strategy: a :class:`HindsightStrategy` or its value. Defaults to ``"future"``.
        goal_key: the desired goal. Defaults to ``"desired_goal"``.
        achieved_goal_key: the achieved goal. Defaults to ``"achieved_goal"``.
        reward_key: where the recomputed reward goes. Defaults to ``("next", "reward")``.
        end_key: the episode-end flag. Defaults to ``("next", "done")``.
        sampler: draws the items; defaults to :class:`RandomSampler`.
        **kwargs: the arguments of :class:`TensorDictReplayBuffer`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> def reward_fn(td):
        ...     return (td["achieved_goal"] - td["desired_goal"]).norm(dim=-1, keepdim=True).lt(0.5).float()
        >>> rb = HERReplayBuffer(reward_fn, her_ratio=1.0, strategy="final", storage=LazyTensorStorage(8))
        >>> steps = TensorDict(
        ...     {"desired_goal": torch.full((4, 1), 9.0), "achieved_goal": torch.arange(4.0).unsqueeze(-1),
        ...      "next": {"reward": torch.zeros(4, 1), "done": torch.tensor([[False]] * 3 + [[True]])}},
        ...     batch_size=[4])
        >>> _ = rb.extend(steps)
        >>> batch = rb.sample(2)
        >>> batch["desired_goal"].tolist(), batch["next", "reward"].shape
        ([[3.0], [3.0]], torch.Size([2, 1]))
    """

    def __init__(
        self,
        reward_fn: Callable[[TensorDictBase], torch.Tensor],
        *,
        her_ratio: float = 0.8,
        strategy: HindsightStrategy | Literal["future", "final", "episode", "random"] = "future",
        goal_key: NestedKey = "desired_goal",
        achieved_goal_key: NestedKey = "achieved_goal",
        reward_key: NestedKey = ("next", "reward"),
        end_key: NestedKey = ("next", "done"),
        sampler: Sampler | None = None,
        **kwargs: Any,
    ) -> None:
        if not 0.0 <= her_ratio <= 1.0:
            raise ValueError(f"her_ratio must be in [0, 1], got {her_ratio}.")
        try:
            strategy = HindsightStrategy(strategy)
        except ValueError:
            valid = [s.value for s in HindsightStrategy]
            raise ValueError(f"strategy must be one of {valid}, got {strategy!r}.") from None
        if not callable(reward_fn):
            raise TypeError(f"reward_fn must be callable, got {type(reward_fn).__name__}.")
        super().__init__(sampler=RandomSampler() if sampler is None else sampler, **kwargs)
        self.reward_fn = reward_fn
        self.her_ratio = her_ratio
        self.strategy = strategy
        self.goal_key = goal_key
        self.achieved_goal_key = achieved_goal_key
        self.reward_key = reward_key
        self.end_key = end_key
        self._keys_validated = False
        self._episode_ends_cache: torch.Tensor | None = None
        self._cache_stamp: tuple[int, int] = (-1, -1)

    # ---- episode boundaries --------------------------------------------------------------------
    def _terminated_key(self) -> NestedKey:
        return (*self.end_key[:-1], "terminated") if isinstance(self.end_key, tuple) else "terminated"

    def _episode_ends(self) -> torch.Tensor:
        # Every write bumps write_count, so a cache keyed on it can never serve stale boundaries
        # (TorchRL keys on (len, cursor, full), which repeat after a full wrap-around).
        stamp = (len(self._storage), self.write_count)
        if stamp != self._cache_stamp or self._episode_ends_cache is None:
            self._episode_ends_cache = self._build_episode_ends()
            self._cache_stamp = stamp
        return self._episode_ends_cache

    def _build_episode_ends(self) -> torch.Tensor:
        n = len(self._storage)
        if n == 0:
            return torch.zeros(0, dtype=torch.long)
        if self._storage.ndim != 1:
            raise ValueError(f"HERReplayBuffer needs a 1-D storage, got ndim={self._storage.ndim}.")
        done = _read_key(self._storage, self.end_key, n, self._rows)
        terminated = _read_key(self._storage, self._terminated_key(), n, self._rows)
        if done is None and terminated is None:
            raise KeyError(
                f"HERReplayBuffer: neither {self.end_key!r} nor {self._terminated_key()!r} is stored: "
                "episode boundaries need one of them."
            )
        flags = [f.bool().reshape(n, -1).any(-1) for f in (done, terminated) if f is not None]
        boundary = flags[0] if len(flags) == 1 else flags[0] | flags[1]
        boundary = boundary.cpu().clone()
        # The last row always closes an episode: when full, no goal is drawn across the wrap.
        boundary[n - 1] = True
        if self._storage._is_full:
            last = _last_written(self._storage, self._writer)
            if last is not None:
                boundary[last % n] = True
        return boundary.nonzero().reshape(-1)

    @staticmethod
    def _episode_range(idx: torch.Tensor, ends: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pos = torch.searchsorted(ends, idx).clamp(max=ends.numel() - 1)
        start = torch.where(pos == 0, torch.zeros_like(pos), ends[(pos - 1).clamp(min=0)] + 1)
        return start, ends[pos]

    def _goal_indices(self, idx: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        n = idx.numel()
        if self.strategy is HindsightStrategy.FUTURE:
            span = (end - idx).clamp(min=0)
            offset = (torch.rand(n, generator=self._rng) * (span + 1).float()).long().clamp(max=span)
            return idx + offset
        if self.strategy is HindsightStrategy.FINAL:
            return end.clone()
        if self.strategy is HindsightStrategy.EPISODE:
            offset = (torch.rand(n, generator=self._rng) * (end - start + 1).float()).long()
            return start + offset
        return torch.randint(len(self._storage), (n,), generator=self._rng)

    # ---- sampling ------------------------------------------------------------------------------
    def _rows(self, index: torch.Tensor) -> TensorDictBase:
        rows = self._storage.get(index)
        if not isinstance(rows, TensorDictBase):  # list storages return one item per index
            rows = self._collate_fn(rows) if self._get_collate else torch.stack(list(rows))
        if not isinstance(rows, TensorDictBase):
            raise TypeError(f"HERReplayBuffer stores TensorDicts, got {type(rows).__name__} items.")
        return rows

    def _validate_keys(self) -> None:
        if self._keys_validated or not len(self._storage):
            return
        first = self._rows(torch.tensor([0]))
        missing = [f"{role}={key!r}" for key, role in ((self.goal_key, "goal_key"),
                                                       (self.achieved_goal_key, "achieved_goal_key"))
                   if first.get(key, None) is None]
        if missing:
            raise KeyError(f"HERReplayBuffer: keys not in storage: {', '.join(missing)}.")
        self._keys_validated = True

    def _sample(self, batch_size: int) -> tuple[Any, dict]:
        with self._lock:
            self._validate_keys()
            data, info = super()._sample(batch_size)
            ends = self._episode_ends()
            idx = torch.as_tensor(info["index"])
            n_her = int(idx.shape[0] * self.her_ratio)
            if n_her == 0 or ends.numel() == 0:
                return data, info
            her_idx = idx[:n_her].cpu()
            start, end = self._episode_range(her_idx, ends)
            goal_idx = self._goal_indices(her_idx, start, end)
            goals = self._rows(goal_idx).get(self.achieved_goal_key)
        self._relabel(data[:n_her], goals)
        return data, info

    def _relabel(self, part: TensorDictBase, goals: torch.Tensor) -> None:
        # ``part`` is a view of the batch: in-place writes land in the returned batch.
        part.set_(self.goal_key, goals.to(part.get(self.goal_key).device))
        next_goal = ("next", *self.goal_key) if isinstance(self.goal_key, tuple) else ("next", self.goal_key)
        if part.get(next_goal, None) is not None:
            part.set_(next_goal, goals)
        reward = torch.as_tensor(self.reward_fn(part))
        stored = part.get(self.reward_key, None)
        if stored is None:
            part.set(self.reward_key, reward if reward.ndim > 1 else reward.unsqueeze(-1))
            return
        if reward.numel() != stored.numel():
            raise ValueError(
                f"HERReplayBuffer: reward_fn returned shape {tuple(reward.shape)}, expected "
                f"{tuple(stored.shape)} (or {tuple(stored.shape[:1])}) for {self.reward_key!r}."
            )
        part.set_(self.reward_key, reward.reshape(stored.shape).to(stored.dtype))

    # ---- state ---------------------------------------------------------------------------------
    def empty(self, empty_write_count: bool = True) -> None:
        super().empty(empty_write_count)
        self._episode_ends_cache = None
        self._cache_stamp = (-1, -1)

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["_her"] = {
            "goal_key": self.goal_key,
            "achieved_goal_key": self.achieved_goal_key,
            "reward_key": self.reward_key,
            "her_ratio": self.her_ratio,
            "strategy": self.strategy.value,
        }
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        state_dict.pop("_her", None)  # configuration is the constructor's; boundaries are rebuilt
        super().load_state_dict(state_dict)
        self._episode_ends_cache = None
        self._cache_stamp = (-1, -1)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(strategy={self.strategy.value!r}, her_ratio={self.her_ratio}, "
            f"goal_key={self.goal_key!r}, achieved_goal_key={self.achieved_goal_key!r}, "
            f"reward_key={self.reward_key!r}, storage={self._storage})"
        )
