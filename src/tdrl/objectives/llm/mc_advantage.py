"""Group-relative Monte-Carlo advantages written on the way into a replay buffer (:class:`MCAdvantage`).

GRPO samples ``grpo_size`` answers per prompt and scores each answer against its own group. The transform
sits on a replay buffer (``rb.append_transform(MCAdvantage(grpo_size=4))``): written trajectories are held
per group id (the prompt, by default) until the group is complete, then written together with their
``"advantage"``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from itertools import combinations
from math import comb
from typing import Any, Literal, cast

import torch
from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict, TensorDictBase, lazy_stack
from tensordict.utils import NestedKey

from tdrl._utils import logger
from tdrl.envs.transforms import Transform

__all__ = ["MCAdvantage", "MCAdvantageSelector"]


class MCAdvantageSelector:
    """Chooses ``group_size`` of an oversampled group's candidate trajectories, by their returns.

    Args:
        strategy: ``"first"`` (the first ``group_size`` candidates), ``"uniform"`` (evenly spaced in the
            order of returns) or ``"balanced"`` (default: the subset whose mean return lies inside
            ``keep_return_bounds`` and is closest to their middle, ties broken by the larger spread).
        max_combinations: past this many subsets, ``"balanced"`` swaps greedily from the uniform pick.
        in_keys: the candidate entry holding one scalar per candidate (default ``["return"]``).

    Examples:
        >>> from tensordict import TensorDict
        >>> MCAdvantageSelector().select(TensorDict({"return": torch.tensor([0.0, 0.0, 0.0, 1.0])}, [4]),
        ...     group_size=2, keep_return_bounds=(0.1, 0.9))
        [0, 3]
    """

    def __init__(
        self,
        strategy: Literal["first", "uniform", "balanced"] = "balanced",
        *,
        max_combinations: int = 100_000,
        in_keys: list[NestedKey] | None = None,
    ) -> None:
        if strategy not in ("first", "uniform", "balanced"):
            raise ValueError(f"strategy must be 'first', 'uniform' or 'balanced', got {strategy!r}.")
        if max_combinations < 1:
            raise ValueError(f"max_combinations must be strictly positive, got {max_combinations}.")
        if in_keys is not None and not in_keys:
            raise ValueError("in_keys must contain at least one key.")
        self.strategy = strategy
        self.max_combinations = int(max_combinations)
        self.in_keys = list(in_keys) if in_keys is not None else ["return"]

    def select(
        self, candidates: TensorDictBase, *, group_size: int, keep_return_bounds: tuple[float, float] | None = None
    ) -> list[int] | None:
        """Indices of the selected candidates, or ``None`` when no subset passes ``keep_return_bounds``."""
        values = candidates.get(self.in_keys[0])
        if values.numel() != candidates.numel():
            raise ValueError(
                f"MCAdvantageSelector expects one scalar per candidate under {self.in_keys[0]!r}, got shape "
                f"{tuple(values.shape)} for {candidates.numel()} candidates."
            )
        values = [float(v) for v in values.detach().reshape(-1).cpu()]
        if len(values) < group_size:
            raise ValueError(f"Need at least {group_size} candidates, got {len(values)}.")
        if len(values) == group_size or self.strategy == "first":
            indices = list(range(group_size))
        elif self.strategy == "uniform" or keep_return_bounds is None:
            indices = _uniform(values, group_size)
        else:
            return self._balanced(values, group_size, keep_return_bounds)
        return indices if _accepted(values, indices, keep_return_bounds) else None

    def _balanced(self, values: list[float], size: int, bounds: tuple[float, float]) -> list[int] | None:
        low, high = bounds
        target = 0.5 * (low + high)
        if comb(len(values), size) <= self.max_combinations:
            best, best_score = None, None
            for combo in combinations(range(len(values)), size):
                chosen = [values[i] for i in combo]
                mean = sum(chosen) / size
                if low < mean < high:
                    score = (abs(mean - target), -(max(chosen) - min(chosen)))
                    if best_score is None or score < best_score:
                        best, best_score = list(combo), score
            return best
        # Too many subsets: move the mean toward the interval one swap at a time, extremes first.
        indices = _uniform(values, size)
        order = sorted(range(len(values)), key=values.__getitem__)
        too_low = sum(values[i] for i in indices) / size <= low
        incoming = [i for i in (reversed(order) if too_low else order) if i not in indices]
        outgoing = sorted(indices, key=values.__getitem__, reverse=not too_low)
        for new, old in zip(incoming, outgoing):
            if _accepted(values, indices, bounds):
                return indices
            indices[indices.index(old)] = new
        return indices if _accepted(values, indices, bounds) else None


def _accepted(values: list[float], indices: list[int], bounds: tuple[float, float] | None) -> bool:
    if bounds is None:
        return True
    mean = sum(values[i] for i in indices) / len(indices)
    return bounds[0] < mean < bounds[1]


def _uniform(values: list[float], size: int) -> list[int]:
    order = sorted(range(len(values)), key=values.__getitem__)
    if size == 1:
        return [order[len(order) // 2]]
    last = len(order) - 1
    return [order[round(k * last / (size - 1))] for k in range(size)]


def _cat(trajectories: list[TensorDictBase]) -> TensorDictBase:
    """Concatenates trajectories along time; ragged ones (token entries of varying length) lazily."""
    try:
        dense: list[Any] = [t.contiguous() if isinstance(t, LazyStackedTensorDict) else t for t in trajectories]
        return cast(TensorDictBase, torch.cat(dense, 0))
    except (RuntimeError, ValueError):
        return lazy_stack([step for t in trajectories for step in t.unbind(0)], 0)


class MCAdvantage(Transform):
    """Group-normalised Monte-Carlo advantage, computed when a group of trajectories is complete.

    Acts on written data (``inv``): each complete trajectory (its last step done) is queued under its group
    id, read at ``prompt_key`` on the first step (a string, or a tensor grouped by value). When a group
    holds ``grpo_size`` trajectories, it is written with ``advantage_key`` set and the queue is emptied;
    until then nothing is written (``inv`` returns ``None``).

    * ``trajectory_return=None``: per-step rewards are normalised over all steps of the group,
      ``(r - mean) / std`` (the LLM GRPO case: one step per answer).
    * ``trajectory_return="sum" | "max" | "mean"``: each trajectory is reduced to a return ``R_i``, the
      returns are normalised over the group and broadcast to every step of their trajectory.

    ``std`` is the unbiased standard deviation, floored at 1e-6 (a group of equal rewards gets 0).

    Args:
        grpo_size: trajectories per group.
        prompt_key: group id entry (default ``"query"``).
        rewards_key: reward entry (default ``("next", "reward")``).
        advantage_key: written advantage entry (default ``"advantage"``).
        done_key: done entry (default ``("next", "done")``).
        verbose: log each group's statistics.

    Keyword Args:
        trajectory_return: see above (default ``None``).
        keep_return_bounds: DAPO dynamic sampling: a group whose mean return is outside the open interval
            ``(low, high)`` (all failed, all succeeded) is dropped. Needs ``trajectory_return``.
        candidate_group_size: collect up to this many candidates per group (default ``grpo_size``) and keep
            the ``grpo_size`` chosen by ``candidate_selector``. Needs ``trajectory_return`` when larger.
        candidate_selection_min_size: candidates needed before the first selection (default ``grpo_size``).
        candidate_selector: the selection strategy (default :class:`MCAdvantageSelector`).

    Examples:
        >>> from tensordict import TensorDict
        >>> def traj(group, rewards):
        ...     T = len(rewards)
        ...     return TensorDict(group=torch.full((T,), group), next=TensorDict(
        ...         reward=torch.tensor(rewards).reshape(T, 1),
        ...         done=torch.tensor([False] * (T - 1) + [True]).reshape(T, 1), batch_size=[T]), batch_size=[T])
        >>> t = MCAdvantage(grpo_size=2, prompt_key="group", trajectory_return="sum")
        >>> t.inv(traj(7, [0.0, 0.0])) is None
        True
        >>> t.inv(traj(7, [0.0, 1.0]))["advantage"].squeeze(-1)
        tensor([-0.7071, -0.7071,  0.7071,  0.7071])
    """

    def __init__(
        self,
        grpo_size: int,
        prompt_key: NestedKey = "query",
        rewards_key: NestedKey = ("next", "reward"),
        advantage_key: NestedKey = "advantage",
        done_key: NestedKey = ("next", "done"),
        verbose: bool = False,
        *,
        trajectory_return: Literal["sum", "max", "mean"] | None = None,
        keep_return_bounds: tuple[float, float] | None = None,
        candidate_group_size: int | None = None,
        candidate_selection_min_size: int | None = None,
        candidate_selector: MCAdvantageSelector | None = None,
    ) -> None:
        candidate_group_size = grpo_size if candidate_group_size is None else int(candidate_group_size)
        min_size = grpo_size if candidate_selection_min_size is None else int(candidate_selection_min_size)
        _check_args(grpo_size, trajectory_return, keep_return_bounds, candidate_group_size, min_size)
        super().__init__(in_keys=[prompt_key, rewards_key, done_key], out_keys=[advantage_key])
        self.grpo_size = int(grpo_size)
        self.prompt_key, self.rewards_key = prompt_key, rewards_key
        self.advantage_key, self.done_key = advantage_key, done_key
        self.verbose = verbose
        self.trajectory_return = trajectory_return
        self.keep_return_bounds: tuple[float, float] | None = (
            None if keep_return_bounds is None else (float(keep_return_bounds[0]), float(keep_return_bounds[1]))
        )
        self.candidate_group_size = candidate_group_size
        self.candidate_selection_min_size = min_size
        self.candidate_selector = candidate_selector or MCAdvantageSelector()
        self.queues: defaultdict[Any, list[TensorDictBase]] = defaultdict(list)
        self.reset_stats()

    # --------------------------------------------------------------- stats
    def reset_stats(self) -> None:
        """Resets the counters of written, dropped and completed groups."""
        self._stats: dict[str, float] = dict.fromkeys(
            ("completed_trajectories", "completed_groups", "written_groups", "dropped_groups"), 0
        )

    def get_stats(self) -> dict[str, float]:
        """Counters and the number of incomplete groups / trajectories held in memory."""
        return {**self._stats, "queued_groups": self.queued_groups, "queued_trajectories": self.queued_trajectories}

    @property
    def queued_groups(self) -> int:
        """Incomplete groups held in memory."""
        return len(self.queues)

    @property
    def queued_trajectories(self) -> int:
        """Trajectories of incomplete groups held in memory."""
        return sum(len(q) for q in self.queues.values())

    def clear_queues(self) -> None:
        """Forgets the incomplete groups."""
        self.queues.clear()

    # ----------------------------------------------------------- transform
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Sampled data passes through unchanged."""
        return tensordict

    # None while no group is complete: the replay buffer then writes nothing (TorchRL's contract).
    def inv(self, tensordict: TensorDictBase) -> TensorDictBase | None:  # type: ignore[override]
        """Queues the complete trajectories of ``tensordict``; returns the groups completed by them (with
        their advantage), or ``None``."""
        return self._inv_call(tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase | None:  # type: ignore[override]
        if tensordict.ndim == 0:
            raise ValueError("MCAdvantage expects trajectories with a time dimension, got a 0-d tensordict.")
        if tensordict.ndim > 2:
            tensordict = tensordict.flatten(0, -2)
        if tensordict.ndim == 2:
            parts = [self._inv_call(t) for t in tensordict.unbind(0)]
        else:
            parts = [self._add_trajectory(t) for t in self._split_trajectories(tensordict)]
        complete = [p for p in parts if p is not None]
        return _cat(complete) if complete else None

    def _split_trajectories(self, td: TensorDictBase) -> list[TensorDictBase]:
        done = td.get(self.done_key).reshape(td.shape[0], -1).any(-1)
        if not bool(done[-1]):
            raise RuntimeError(
                f"MCAdvantage needs complete trajectories: the last step of the written data is not done "
                f"({self.done_key!r}); write trajectories once they end."
            )
        ends = (done.nonzero().squeeze(-1) + 1).tolist()
        starts = [0] + ends[:-1]
        return [td[s:e] for s, e in zip(starts, ends)]

    def _group_id(self, td: TensorDictBase) -> Any:
        group = td[0].get(self.prompt_key, None)
        if group is None:
            raise KeyError(f"MCAdvantage: missing group id entry {self.prompt_key!r} (set prompt_key=...)")
        if isinstance(group, NonTensorData):
            group = group.data
        if isinstance(group, torch.Tensor):
            return group.item() if group.numel() == 1 else tuple(group.reshape(-1).tolist())
        if not isinstance(group, str):
            raise TypeError(
                f"MCAdvantage: the group id {self.prompt_key!r} must be a string or a tensor, got {type(group)}"
            )
        return group

    def _add_trajectory(self, td: TensorDictBase) -> TensorDictBase | None:
        group = self._group_id(td)
        self._stats["completed_trajectories"] += 1
        queue = self.queues[group]
        queue.append(td)
        if self.trajectory_return is not None:
            if len(queue) < self.candidate_selection_min_size:
                return None
            out = self._trajectory_advantage(queue)
            if out is not None or len(queue) == self.candidate_group_size:
                del self.queues[group]
                self._stats["completed_groups"] += 1
                self._stats["written_groups" if out is not None else "dropped_groups"] += 1
            return out
        if len(queue) < self.grpo_size:
            return None
        del self.queues[group]
        self._stats["completed_groups"] += 1
        self._stats["written_groups"] += 1
        return self._step_advantage(queue)

    def _step_advantage(self, trajs: list[TensorDictBase]) -> TensorDictBase:
        rewards = [t.get(self.rewards_key) for t in trajs]
        flat = torch.cat([r.reshape(-1) for r in rewards])
        mean, std = flat.mean(), flat.std().clamp_min(1e-6)
        if self.verbose:
            logger.info("MCAdvantage: group of %d, reward mean %.4f std %.4f", len(trajs), mean, std)
        for t, r in zip(trajs, rewards):
            t.set(self.advantage_key, (r - mean) / std)
        return _cat(trajs)

    def _returns(self, trajs: list[TensorDictBase]) -> torch.Tensor:
        assert self.trajectory_return is not None  # only the trajectory-return path calls this
        reducers: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"sum": torch.sum, "max": torch.max, "mean": torch.mean}
        reduce = reducers[self.trajectory_return]
        return torch.stack([reduce(t.get(self.rewards_key).float()) for t in trajs])

    def _trajectory_advantage(self, trajs: list[TensorDictBase]) -> TensorDictBase | None:
        returns = self._returns(trajs)
        chosen = self.candidate_selector.select(
            TensorDict({"return": returns}, batch_size=[len(trajs)]),
            group_size=self.grpo_size,
            keep_return_bounds=self.keep_return_bounds,
        )
        if chosen is None:
            return None
        trajs, returns = [trajs[i] for i in chosen], returns[chosen]
        advantage = (returns - returns.mean()) / returns.std().clamp_min(1e-6)
        if self.verbose:
            logger.info("MCAdvantage: returns %s -> advantages %s", returns.tolist(), advantage.tolist())
        for t, a in zip(trajs, advantage):
            reward = t.get(self.rewards_key)
            t.set(self.advantage_key, a.to(reward.dtype).expand(reward.shape).clone())
        return _cat(trajs)


def _check_args(grpo_size, trajectory_return, bounds, candidate_group_size, min_size) -> None:
    if grpo_size < 1:
        raise ValueError(f"grpo_size must be >= 1, got {grpo_size}.")
    if trajectory_return not in (None, "sum", "max", "mean"):
        raise ValueError(f"trajectory_return must be 'sum', 'max', 'mean' or None, got {trajectory_return!r}.")
    if trajectory_return is not None and grpo_size < 2:
        raise ValueError(f"trajectory_return needs grpo_size >= 2 (a std over the group), got {grpo_size}.")
    if candidate_group_size < grpo_size:
        raise ValueError(f"candidate_group_size ({candidate_group_size}) must be >= grpo_size ({grpo_size}).")
    if candidate_group_size > grpo_size and trajectory_return is None:
        raise ValueError("candidate_group_size > grpo_size requires trajectory_return (selection is by return).")
    if not grpo_size <= min_size <= candidate_group_size:
        raise ValueError(
            f"candidate_selection_min_size ({min_size}) must lie in [grpo_size, candidate_group_size] = "
            f"[{grpo_size}, {candidate_group_size}]."
        )
    if bounds is not None:
        if trajectory_return is None:
            raise ValueError("keep_return_bounds filters trajectory returns: set trajectory_return too.")
        if len(bounds) != 2 or not bounds[0] < bounds[1]:
            raise ValueError(f"keep_return_bounds must be an increasing (low, high) pair, got {bounds}.")
