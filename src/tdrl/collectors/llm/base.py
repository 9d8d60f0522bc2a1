"""``LLMCollector``: a collector of dialog turns (one env step = one model reply) for language-model envs.

An LLM env step carries ragged token entries (each reply has its own length), so steps are lazily stacked
instead of being copied into a preallocated buffer, and the batch size is counted in dialog turns. The
collector can yield fixed-size batches of turns, or complete trajectories (dialogs), and push them to a
replay buffer (``MCAdvantage`` on that buffer then groups the answers of each prompt).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import torch
from tensordict import TensorDictBase, lazy_stack

from tdrl._utils import logger
from tdrl.collectors._single import Collector
from tdrl.envs import EnvBase
from tdrl.weight_update import WeightUpdaterBase

__all__ = ["LLMCollector"]

_TRAJ_KEY = ("collector", "traj_ids")


class _QueueWriter:
    """Puts each written batch on a queue (``queue=`` instead of a replay buffer)."""

    def __init__(self, queue: Any) -> None:  # noqa: ANN401
        self.queue = queue

    def extend(self, data: TensorDictBase) -> None:
        self.queue.put(data)


def _cat_steps(trajectories: list[TensorDictBase]) -> TensorDictBase:
    """Joins 1-d trajectories along time into one 1-d lazy stack of steps (ragged entries stay ragged)."""
    return lazy_stack([step for traj in trajectories for step in traj.unbind(0)], 0)


class LLMCollector(Collector):
    """Collects dialog turns from an LLM env with an LLM policy (e.g. ``ChatEnv`` + ``TransformersWrapper``).

    Args:
        env: the environment, or a function building it.

    Keyword Args:
        policy: the policy (exclusive with ``policy_factory``).
        policy_factory: builds the policy where the collector runs (for policies that cannot be pickled).
        dialog_turns_per_batch: turns per batch (required unless ``yield_completed_trajectories``, where it
            defaults to 1: each batch then holds at least this many turns, made of whole trajectories).
        yield_only_last_steps: yield only the last (done) turn of each dialog (implies
            ``yield_completed_trajectories``); the dropped turns still count toward ``total_dialog_turns``.
        yield_completed_trajectories: yield whole dialogs rather than fixed windows of turns.
        postproc: applied to each batch before it is yielded or written.
        total_dialog_turns: turns to collect in total (``-1``: no end).
        async_envs: TorchRL's ``AsyncEnvPool`` path; tdrl has no async env pool, so it must be falsy.
        replay_buffer: write batches there (``extend``) and yield ``None``.
        reset_at_each_iter: reset the env before each batch of windowed collection.
        flatten_data: flatten ``[B, T]`` batches to ``[B * T]`` (default: ``True`` with a replay buffer).
        weight_updater: pushes new weights to the policy (see :meth:`update_policy_weights_`).
        queue: put batches on this queue (``queue.put``) instead of yielding them.
        track_policy_version: stamp ``"policy_version"`` on the collected turns; the version goes up with
            each :meth:`update_policy_weights_` / :meth:`increment_version`.
        verbose: log progress.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.envs import EnvBase
        >>> from tdrl.data import Composite, Unbounded
        >>> class TwoTurns(EnvBase):  # a stand-in for ChatEnv: each dialog lasts two turns
        ...     def __init__(self):
        ...         super().__init__(batch_size=(2,))
        ...         self.observation_spec = Composite(turn=Unbounded((2, 1)), shape=(2,))
        ...         self.action_spec = Unbounded((2, 1))
        ...         self.reward_spec = Unbounded((2, 1))
        ...     def _reset(self, td, **kw):
        ...         self.turn = torch.zeros(2, 1)
        ...         return TensorDict(turn=self.turn.clone(), batch_size=[2])
        ...     def _step(self, td):
        ...         self.turn = self.turn + 1
        ...         return TensorDict(turn=self.turn.clone(), reward=td["action"], done=self.turn >= 2,
        ...             batch_size=[2])
        ...     def _set_seed(self, seed): ...
        >>> policy = lambda td: td.set("action", torch.ones(2, 1))
        >>> collector = LLMCollector(TwoTurns(), policy=policy, yield_completed_trajectories=True,
        ...     dialog_turns_per_batch=2, total_dialog_turns=4)
        >>> [batch.shape for batch in collector]
        [torch.Size([2]), torch.Size([2])]
    """

    def __init__(
        self,
        env: EnvBase | Callable[[], EnvBase],
        *,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        policy_factory: Callable[[], Callable[[TensorDictBase], TensorDictBase]] | None = None,
        dialog_turns_per_batch: int | None = None,
        yield_only_last_steps: bool | None = None,
        yield_completed_trajectories: bool | None = None,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        total_dialog_turns: int = -1,
        async_envs: bool | None = None,
        replay_buffer: Any = None,  # noqa: ANN401
        reset_at_each_iter: bool = False,
        flatten_data: bool | None = None,
        weight_updater: WeightUpdaterBase | Callable[[], WeightUpdaterBase] | None = None,
        queue: Any | None = None,  # noqa: ANN401
        track_policy_version: bool = False,
        verbose: bool = False,
    ) -> None:
        if queue is not None and replay_buffer is not None:
            raise TypeError("LLMCollector: pass either a replay_buffer or a queue, not both")
        if async_envs:
            raise ValueError("async_envs=True needs TorchRL's AsyncEnvPool, which tdrl does not provide")
        if not isinstance(track_policy_version, bool):
            raise TypeError("track_policy_version must be a bool (tdrl stamps 'policy_version' on the data)")
        last_only = bool(yield_only_last_steps)
        if yield_completed_trajectories is None:
            yield_completed_trajectories = last_only
        elif last_only and not yield_completed_trajectories:
            raise TypeError("yield_only_last_steps=True requires yield_completed_trajectories=True (or None)")
        if last_only and (flatten_data is not None or reset_at_each_iter):
            raise TypeError("yield_only_last_steps=True cannot be combined with flatten_data or reset_at_each_iter")
        if dialog_turns_per_batch is None:
            if not yield_completed_trajectories:
                raise TypeError("dialog_turns_per_batch is required unless yield_completed_trajectories=True")
            dialog_turns_per_batch = 1
        if queue is not None:
            replay_buffer = _QueueWriter(queue)
        super().__init__(
            env,
            policy,
            policy_factory=policy_factory,
            frames_per_batch=dialog_turns_per_batch,
            total_frames=total_dialog_turns,
            reset_at_each_iter=reset_at_each_iter,
            postproc=postproc,
            replay_buffer=replay_buffer,
            trust_policy=True,
            weight_updater=weight_updater,
            track_policy_version=track_policy_version,
        )
        if yield_completed_trajectories and len(self.env.batch_size) != 1:
            raise ValueError(
                f"yield_completed_trajectories needs an env with one batch dimension, got {tuple(self.env.batch_size)}"
            )
        register = getattr(self.policy, "register_collector", None)
        if callable(register):
            register(self)
        self.flatten_data = replay_buffer is not None if flatten_data is None else bool(flatten_data)
        self.yield_completed_trajectories = bool(yield_completed_trajectories)
        self.yield_only_last_steps = last_only
        self.verbose = verbose
        n = self.env.batch_size[0] if len(self.env.batch_size) else 1
        self._dialogs: list[list[TensorDictBase]] = [[] for _ in range(n)]
        self._completed: deque[tuple[TensorDictBase, int]] = deque()

    def _set_frames(self, frames_per_batch: int, total_frames: int, init_random_frames: int | None) -> None:
        # Turns, not env steps: a window stops once it holds >= dialog_turns_per_batch turns (whole env steps).
        if frames_per_batch is None or frames_per_batch <= 0:
            raise ValueError(f"dialog_turns_per_batch must be a positive int, got {frames_per_batch}")
        self.frames_per_batch = self.requested_frames_per_batch = int(frames_per_batch)
        self.total_frames = -1 if total_frames is None or total_frames < 0 else int(total_frames)
        self.init_random_frames = 0

    @property
    def dialog_turns_per_batch(self) -> int:
        """Turns per batch (TorchRL's name for ``frames_per_batch``)."""
        return self.requested_frames_per_batch

    @property
    def total_dialog_turns(self) -> int:
        """Turns to collect in total (``-1``: no end)."""
        return self.total_frames

    # --------------------------------------------------------------------------------- rollout
    def _turn(self, td: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """One policy reply and env step: ``(step data, next input)``."""
        data = self.env.step(self.policy(td))
        if bool(data.get(("next", "done")).all()):
            # Every dialog ended (the one-turn case): a fresh reset, with nothing of the old turn to merge into it.
            td = self.env.reset()
        else:
            td = self.env.maybe_reset(self.env.step_mdp(data))
        if self.track_traj_ids and self._traj_ids is not None:
            data.set(_TRAJ_KEY, self._traj_ids.clone())
            self._update_traj_ids(data)
        return data, td

    def _rollout_window(self) -> TensorDictBase:
        if self._carry is None or self.reset_at_each_iter:
            self._reset()
        steps, turns, td = [], 0, self._carry
        while turns < self.dialog_turns_per_batch:
            data, td = self._turn(td)
            steps.append(data)
            turns += max(1, data.numel())
        self._carry = td
        batch = lazy_stack(steps, self.env.batch_dims)  # [*B, T]
        return batch.reshape(-1) if self.flatten_data else batch

    def _rollout_trajectories(self) -> tuple[TensorDictBase, int]:
        """Whole dialogs holding at least ``dialog_turns_per_batch`` turns, and the turns they account for
        (with ``yield_only_last_steps``, the dropped turns of those dialogs too)."""
        if self._carry is None:
            self._reset()
        td = self._carry
        while sum(t.numel() for t, _ in self._completed) < self.dialog_turns_per_batch:
            data, td = self._turn(td)
            done = data.get(("next", "done")).reshape(len(self._dialogs), -1).any(-1)
            for i, step in enumerate(data.unbind(0)):
                self._dialogs[i].append(step)
                if bool(done[i]):
                    dialog = self._dialogs[i]
                    kept = dialog[-1:] if self.yield_only_last_steps else dialog
                    self._completed.append((lazy_stack(kept, 0), len(dialog) - len(kept)))
                    self._dialogs[i] = []
        self._carry = td
        out, turns, accounted = [], 0, 0
        while turns < self.dialog_turns_per_batch:
            traj, dropped = self._completed.popleft()
            out.append(traj)
            turns += traj.numel()
            accounted += traj.numel() + dropped
        return _cat_steps(out), accounted

    def iterator(self) -> Iterator[TensorDictBase | None]:
        while self.total_frames < 0 or self._frames < self.total_frames:
            if self._closed:
                raise RuntimeError("the collector was shut down")
            with torch.no_grad():
                if self.yield_completed_trajectories:
                    batch, ran = self._rollout_trajectories()
                else:
                    batch = self._rollout_window()
                    ran = batch.numel()
            # turns dropped by yield_only_last_steps count toward the budget: the env ran them
            self._frames += ran
            self._iter += 1
            self._stamp_policy_version(batch)
            if self.postproc is not None:
                batch = self.postproc(batch)
            if self.verbose:
                self._log(batch)
            if self.replay_buffer is not None:
                self.replay_buffer.extend(batch)
                yield None
            else:
                yield batch

    def _log(self, batch: TensorDictBase) -> None:
        logger.info("LLMCollector: batch %d of shape %s, %d turns so far", self._iter, tuple(batch.shape), self._frames)

    def __repr__(self) -> str:
        return (
            f"LLMCollector(env={type(self.env).__name__}, dialog_turns_per_batch={self.dialog_turns_per_batch}, "
            f"total_dialog_turns={self.total_frames}, turns={self._frames})"
        )
