"""Hooks that return scalars to log: batch statistics, episode returns, frames, evaluation, timings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl._utils import timeit
from tdrl.collectors.utils import split_trajectories
from tdrl.envs import ExplorationType
from tdrl.trainers.evaluation import Evaluator
from tdrl.trainers.hooks.base import TrainerHookBase

if TYPE_CHECKING:
    from tdrl.trainers.trainer import Trainer

__all__ = ["CountFramesLog", "LogEpisodeReturn", "LogScalar", "LogTiming", "LogValidationReward", "UTDRHook"]

_MASK = ("collector", "mask")


class _Stateless(TrainerHookBase):
    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        del state_dict


class LogScalar(_Stateless):
    """Logs a reduction (and the std) of ``batch[key]`` (destination ``pre_steps_log``).

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"next": {"reward": torch.tensor([1.0, 3.0])}}, [2])
        >>> LogScalar(("next", "reward"), "r_training")(td)["r_training"]
        2.0
    """

    def __init__(
        self,
        key: NestedKey = ("next", "reward"),
        logname: str | None = None,
        log_pbar: bool = False,
        include_std: bool = True,
        reduction: Literal["mean", "sum", "min", "max"] = "mean",
    ) -> None:
        if reduction not in ("mean", "sum", "min", "max"):
            raise ValueError(f"reduction must be one of ['mean', 'sum', 'min', 'max'], got {reduction}")
        self.key = key
        self.logname = logname if logname is not None else str(key)
        self.log_pbar = log_pbar
        self.include_std = include_std
        self.reduction = reduction

    def __call__(self, batch: TensorDictBase) -> dict[str, Any]:
        value = batch.get(self.key)
        mask = batch.get(_MASK, None)
        if mask is not None:
            value = value[mask]
        value = value.float()
        out: dict[str, Any] = {self.logname: getattr(value, self.reduction)().item(), "log_pbar": self.log_pbar}
        if self.include_std and value.numel() > 1:
            out[f"{self.logname}_std"] = value.std().item()
        return out

    def register(self, trainer: Trainer, name: str | None = None) -> None:
        trainer.register_op("pre_steps_log", self)
        trainer.register_module(name or f"log_{self.logname}", self)


class LogEpisodeReturn(_Stateless):
    """tdrl extension: logs the mean return of the episodes that ended in the batch.

    Reads the ``RewardSum`` entry ``("next", "episode_reward")`` at the steps where ``("next", "done")`` is
    set; logs nothing for a batch in which no episode ended.

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"next": {"episode_reward": torch.tensor([[1.0], [5.0]]),
        ...     "done": torch.tensor([[False], [True]])}}, [2])
        >>> LogEpisodeReturn()(td)["r_episode"]
        5.0
    """

    def __init__(self, key: NestedKey = ("next", "episode_reward"), logname: str = "r_episode", log_pbar: bool = True) -> None:
        self.key = key
        self.logname = logname
        self.log_pbar = log_pbar

    def __call__(self, batch: TensorDictBase) -> dict[str, Any] | None:
        done = batch.get(("next", "done"))
        ret = batch.get(self.key, None)
        if ret is None:
            raise KeyError(f"LogEpisodeReturn reads {self.key!r}: append a RewardSum transform to the env")
        ended = ret[done.expand_as(ret)]
        if not ended.numel():
            return None
        return {self.logname: ended.float().mean().item(), "log_pbar": self.log_pbar}

    def register(self, trainer: Trainer, name: str = "log_episode_return") -> None:
        trainer.register_op("pre_steps_log", self)
        trainer.register_module(name, self)


class CountFramesLog(TrainerHookBase):
    """Logs the running frame count as ``n_frames`` (destination ``pre_steps_log``).

    Examples:
        >>> from tensordict import TensorDict
        >>> hook = CountFramesLog(frame_skip=2)
        >>> _ = hook(TensorDict({}, [5]))
        >>> hook(TensorDict({}, [5]))["n_frames"]
        20
    """

    def __init__(self, frame_skip: int, log_pbar: bool = False) -> None:
        self.frame_skip = frame_skip
        self.log_pbar = log_pbar
        self.frame_count = 0

    def __call__(self, batch: TensorDictBase) -> dict[str, Any]:
        mask = batch.get(_MASK, None)
        frames = int(mask.sum()) if mask is not None else batch.numel()
        self.frame_count += frames * self.frame_skip
        return {"n_frames": self.frame_count, "log_pbar": self.log_pbar}

    def state_dict(self) -> dict[str, Any]:
        return {"frame_count": self.frame_count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.frame_count = state_dict["frame_count"]

    def register(self, trainer: Trainer, name: str = "count_frames_log") -> None:
        trainer.register_module(name, self)
        trainer.register_op("pre_steps_log", self)


class LogValidationReward(TrainerHookBase):
    """Runs the policy in an evaluation env every ``record_interval`` calls and logs its rewards.

    Logs ``r_evaluation`` (mean reward per step) and ``total_r_evaluation`` (mean summed reward per
    trajectory) under TorchRL's names; timed under ``trainer/eval``.

    Args:
        record_interval: calls between two evaluations.
        record_frames: steps per evaluation rollout.
        frame_skip: divides the per-step reward.
        policy_exploration: the policy.
        environment: the evaluation env.
        exploration_type: the exploration mode during evaluation.
        log_keys: keys to log (default ``[("next", "reward")]``).
        out_keys: log names of ``log_keys``.
        suffix: kept for TorchRL compatibility.
        log_pbar: show the values on the progress bar.
        recorder: former name of ``environment``.

    Examples:
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import RandomPolicy
        >>> env = GymEnv("CartPole-v1")
        >>> _ = env.set_seed(0)
        >>> hook = LogValidationReward(record_interval=2, record_frames=20, environment=env,
        ...                            policy_exploration=RandomPolicy(env.action_spec))
        >>> out = hook()  # evaluates on calls 0, 2, 4, ...
        >>> sorted(k for k in out if k != "log_pbar"), out["r_evaluation"]
        (['r_evaluation', 'total_r_evaluation'], 1.0)
        >>> hook() is None
        True
    """

    def __init__(
        self,
        *,
        record_interval: int,
        record_frames: int,
        frame_skip: int = 1,
        policy_exploration: Any,
        environment: Any = None,
        exploration_type: ExplorationType = ExplorationType.RANDOM,
        log_keys: list[NestedKey] | None = None,
        out_keys: dict[NestedKey, str] | None = None,
        suffix: str | None = None,
        log_pbar: bool = False,
        recorder: Any = None,
    ) -> None:
        if environment is not None and recorder is not None:
            raise ValueError("environment and recorder conflict.")
        self.environment = environment if environment is not None else recorder
        if self.environment is None:
            raise ValueError("LogValidationReward needs an environment")
        self.record_interval = record_interval
        self.record_frames = record_frames
        self.frame_skip = frame_skip
        self.policy_exploration = policy_exploration
        self.exploration_type = exploration_type
        self.log_keys = log_keys if log_keys is not None else [("next", "reward")]
        self.out_keys = dict(out_keys or {})
        self.out_keys.setdefault(("next", "reward"), "r_evaluation")
        self.suffix = suffix
        self.log_pbar = log_pbar
        self._count = 0

    @torch.no_grad()
    def __call__(self, batch: TensorDictBase | None = None) -> dict[str, Any] | None:
        out = None
        if self._count % self.record_interval == 0:
            with timeit("trainer/eval", exclusive=True):
                evaluator = Evaluator(self.environment, self.policy_exploration, max_steps=self.record_frames,
                                      exploration_type=self.exploration_type)
                data = evaluator.rollout()
                trajs = split_trajectories(data, prefix="collector")
                out = {"log_pbar": self.log_pbar}
                for key in self.log_keys:
                    name = self.out_keys.get(key, str(key))
                    value = trajs.get(key).float()
                    if key == ("next", "reward"):
                        mask = trajs.get(("collector", "mask"))
                        out[name] = (value[mask].mean() / self.frame_skip).item()
                        out["total_" + name] = value.sum(dim=trajs.ndim - 1).mean().item()
                    else:
                        out[name] = value.mean().item()
        self._count += 1
        return out

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"_count": self._count}
        if hasattr(self.environment, "state_dict"):
            state["recorder_state_dict"] = self.environment.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._count = state_dict.get("_count", 0)
        if "recorder_state_dict" in state_dict:
            self.environment.load_state_dict(state_dict["recorder_state_dict"])

    def register(self, trainer: Trainer, name: str = "recorder") -> None:
        trainer.register_module(name, self)
        trainer.register_op("post_steps_log", self)


class LogTiming(TrainerHookBase):
    """Logs the :class:`~tdrl._utils.timeit` registry (destination ``post_steps_log``).

    Examples:
        >>> timeit.erase()
        >>> with timeit("x"):
        ...     pass
        >>> list(LogTiming()())
        ['time/x']
    """

    def __init__(self, prefix: str = "time", percall: bool = True, erase: bool = False) -> None:
        self.prefix = prefix
        self.percall = percall
        self.erase = erase

    def __call__(self, batch: TensorDictBase | None = None) -> dict[str, float]:
        out = timeit.todict(percall=self.percall, prefix=self.prefix)
        if self.erase:
            timeit.erase()
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "percall": self.percall, "erase": self.erase}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.prefix = state_dict.get("prefix", "time")
        self.percall = state_dict.get("percall", True)
        self.erase = state_dict.get("erase", False)

    def register(self, trainer: Trainer, name: str | None = None) -> None:
        trainer.register_module(name or "log_timing", self)
        trainer.register_op("post_steps_log", self)


class UTDRHook(_Stateless):
    """Logs the update-to-data ratio ``batch_size * optim_steps / frames written`` (``pre_steps_log``).

    Examples:
        >>> from types import SimpleNamespace
        >>> import torch
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> rb = ReplayBuffer(storage=LazyTensorStorage(100), batch_size=32)
        >>> _ = rb.extend(torch.zeros(64, 3))
        >>> trainer = SimpleNamespace(replay_buffer=rb, optim_count=4)  # 4 optimiser steps of 32 samples so far
        >>> UTDRHook(trainer)()["utd_ratio"]
        2.0
    """

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    def __call__(self, batch: TensorDictBase | None = None) -> dict[str, Any]:
        rb = getattr(self.trainer, "replay_buffer", None)
        if rb is None:
            rb = getattr(self.trainer.collector, "replay_buffer", None)
        if rb is None:
            raise RuntimeError("UTDRHook needs a replay buffer on the trainer or its collector")
        write_count = int(getattr(rb, "write_count", len(rb)))
        if not write_count:
            return {}
        batch_size = rb.batch_size or 1
        update_count = self.trainer.optim_count
        return {"utd_ratio": batch_size * update_count / write_count, "write_count": write_count,
                "update_count": update_count, "log_pbar": False}

    def register(self, trainer: Trainer, name: str = "utdr_hook") -> None:
        trainer.register_op("pre_steps_log", self)
        trainer.register_module(name, self)
