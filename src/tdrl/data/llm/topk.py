"""``TopKRewardSelector``: a replay-buffer write transform keeping the best answers of each prompt.

Rejection-sampling fine-tuning (and "best-of-n" data collection) writes only the answers that scored well.
The selector holds the written trajectories per prompt until ``total_dialog_turns`` of them are in, then
writes the ``topk_size`` best of those whose reward is above the group's median (none when every reward is
equal: there is nothing to learn from such a group). Buffer transforms are duck-typed (a forward call and an
``inv`` run on written data, see ``tdrl.data.replay_buffers.transforms``), so this lives with the LLM data.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, cast

import torch
from tensordict import NestedKey, NonTensorData, TensorDictBase

from tdrl._utils import logger

__all__ = ["TopKRewardSelector"]


class TopKRewardSelector:
    """Writes the ``topk_size`` best-rewarded of every ``total_dialog_turns`` answers to the same prompt.

    Put it on a replay buffer with ``rb.append_transform(selector)``. Written data must hold whole
    trajectories: a 1-d batch is split after each ``done`` step, each trajectory is queued under its first
    step's prompt (a string at ``prompt_key``), and each trajectory of a complete group is scored by the
    mean over its steps of the mean of their ``rewards_key`` entry (the per-token rewards of an answer). The
    trajectories strictly above the group's median are kept whole, at most ``topk_size`` of them, best first.
    A ``[B, T]`` batch is read as ``B`` trajectories.

    A group is written once: its queue is emptied when it completes, so the next answers to the same
    prompt start a new group. (TorchRL 0.14.1 keeps a sliding window, writing overlapping selections again
    for every further answer, and ranks single steps, splitting multi-step trajectories; see
    ``docs/differences.md``.)

    Args:
        total_dialog_turns: answers per prompt in one group.
        topk_size: the most answers written per group (``<= total_dialog_turns``).

    Keyword Args:
        prompt_key: the prompt string of each step (default ``("text", "prompt")``).
        rewards_key: the reward entry (default ``("next", "reward")``).
        done_key: the done flag ending a trajectory (default ``("next", "done")``).
        verbose: log each selection.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict, lazy_stack
        >>> from tdrl.data import LazyStackStorage, ReplayBuffer
        >>> rb = ReplayBuffer(storage=LazyStackStorage(20))
        >>> _ = rb.append_transform(TopKRewardSelector(4, 2, prompt_key="text", verbose=False))
        >>> steps = lazy_stack([TensorDict({("next", "done"): torch.ones(1, dtype=torch.bool),
        ...     ("next", "reward"): torch.full((3, 1), float(r)), "text": "2+2="}) for r in [0, 3, 1, 2]])
        >>> _ = rb.extend(steps)
        >>> rb[:].get(("next", "reward"), as_padded_tensor=True)[:, 0, 0]
        tensor([3., 2.])
    """

    def __init__(
        self,
        total_dialog_turns: int,
        topk_size: int,
        prompt_key: NestedKey = ("text", "prompt"),
        rewards_key: NestedKey = ("next", "reward"),
        done_key: NestedKey = ("next", "done"),
        verbose: bool = True,
    ) -> None:
        if total_dialog_turns < 1 or topk_size < 1:
            raise ValueError(
                f"total_dialog_turns and topk_size must be >= 1, got {total_dialog_turns=} and {topk_size=}"
            )
        if topk_size > total_dialog_turns:
            raise ValueError(
                f"topk_size must be smaller than or equal to total_dialog_turns, got {topk_size=} and "
                f"{total_dialog_turns=}"
            )
        self.total_dialog_turns, self.topk_size = int(total_dialog_turns), int(topk_size)
        self.prompt_key, self.rewards_key, self.done_key = prompt_key, rewards_key, done_key
        self.in_keys = [prompt_key, rewards_key, done_key]
        self.verbose = verbose
        self.queues: defaultdict[str, list[TensorDictBase]] = defaultdict(list)

    def __call__(self, tensordict: Any) -> Any:  # noqa: ANN401
        """Sampled data passes unchanged."""
        return tensordict

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        """Queues written trajectories; returns the selections of the groups they complete (``None``: none)."""
        if tensordict.ndim == 0:
            tensordict = tensordict.unsqueeze(0)
        if tensordict.ndim > 2:
            tensordict = tensordict.flatten(0, -2)
        trajs = list(tensordict.unbind(0)) if tensordict.ndim == 2 else self._split(tensordict)
        out = [sel for sel in map(self._add, trajs) if sel is not None]
        return _cat(out) if out else None

    def _split(self, td: TensorDictBase) -> list[TensorDictBase]:
        if self.done_key not in td.keys(True):
            raise KeyError(f"TopKRewardSelector: no {self.done_key!r} entry in the written data")
        flags = td.get(self.done_key, as_padded_tensor=True)  # type: ignore[call-overload]  # stubs lack it
        done = flags.reshape(td.shape[0], -1).any(-1)
        if not bool(done[-1]):
            raise RuntimeError(
                "TopKRewardSelector: expected whole trajectories, the last written step is not done"
            )
        ends = (done.nonzero().squeeze(-1) + 1).tolist()
        return [td[start:end] for start, end in zip([0, *ends[:-1]], ends)]

    def _add(self, traj: TensorDictBase) -> TensorDictBase | None:
        prompt = traj[0].get(self.prompt_key, None)
        prompt = prompt.data if isinstance(prompt, NonTensorData) else prompt
        if not isinstance(prompt, str):
            raise TypeError(
                f"TopKRewardSelector: expected a string at {self.prompt_key!r}, got {type(prompt).__name__}"
            )
        queue = self.queues[prompt]
        queue.append(traj)
        if len(queue) < self.total_dialog_turns:
            return None
        del self.queues[prompt]
        return self._select(prompt, queue)

    def _score(self, traj: TensorDictBase) -> torch.Tensor:
        return torch.stack(
            [self._aggregate_rewards(traj[i].get(self.rewards_key)) for i in range(traj.shape[0])]
        ).mean()

    def _select(self, prompt: str, group: list[TensorDictBase]) -> TensorDictBase | None:
        reward = torch.stack([self._score(traj) for traj in group])
        if bool((reward == reward[0]).all()):
            if self.verbose:
                logger.warning(
                    "TopKRewardSelector: all rewards of %r are equal (%s): nothing written",
                    prompt,
                    float(reward[0]),
                )
            return None
        above = (reward > reward.median()).nonzero().squeeze(-1)
        best = above[reward[above].topk(min(self.topk_size, above.numel())).indices]
        if self.verbose:
            logger.info("TopKRewardSelector: %r keeps rewards %s", prompt, reward[best].tolist())
        return _cat([group[i] for i in best.tolist()])

    @staticmethod
    def _aggregate_rewards(reward: torch.Tensor) -> torch.Tensor:
        """One step's score: the mean of its reward entries (per-token rewards ``[T, 1]``, or a scalar)."""
        return reward.float().mean()

    def __repr__(self) -> str:
        return f"TopKRewardSelector(total_dialog_turns={self.total_dialog_turns}, topk_size={self.topk_size})"


def _cat(parts: list[TensorDictBase]) -> TensorDictBase:
    # torch.cat dispatches to TensorDict's __torch_function__; torch's stubs only know tensors
    return cast(TensorDictBase, torch.cat(parts, 0))  # type: ignore[arg-type]
