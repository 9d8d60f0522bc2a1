"""The generic :class:`Trainer`: a collection loop, an optimisation loop, and hooks at fixed points.

The loop, per collected batch::

    batch_process -> pre_steps_log -> [pre_optim_steps -> for each epoch:
        (pre_epoch_log, pre_epoch) -> for each step: process_optim_batch -> loss -> post_loss
        -> process_loss -> optimizer -> post_optim -> post_optim_log
        -> (post_epoch_log, post_epoch)] -> post_optim_complete_log -> post_steps -> post_steps_log
        -> checkpoint

Phases are timed with :class:`tdrl._utils.timeit` under ``trainer/collect``, ``trainer/optim``,
``trainer/log`` and ``trainer/checkpoint`` (evaluation hooks add ``trainer/eval``). The phase timers are
exclusive: logging inside the optimisation loop counts as ``log``, an evaluation run by a logging hook as
``eval``, so the phase totals add up to the training time. A checkpoint carries them, so that a resumed
run reports the time per phase of the whole run.
"""

from __future__ import annotations

import enum
import math
import os
import pathlib
import types
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from textwrap import indent
from typing import Any, Literal

import torch
from tensordict import TensorDict, TensorDictBase
from torch import optim

from tdrl._utils import logger as tdrl_logger
from tdrl._utils import set_global_seed, timeit
from tdrl.trainers.checkpoint import get_rng_state, load_checkpoint, save_checkpoint, set_rng_state
from tdrl.trainers.hooks.base import OptimizationStepper
from tdrl.trainers.hooks.optim import OptimizerHook
from tdrl.trainers.hooks.scalars import LogTiming

try:
    from tqdm import tqdm

    _has_tqdm = True
except ImportError:  # pragma: no cover - tqdm is a core dependency
    _has_tqdm = False

__all__ = ["HOOK_DESTINATIONS", "HookPoint", "HookPointName", "LossAverage", "Trainer", "timing_table"]

REWARD_KEY = ("next", "reward")
LOGGER_METHODS = {"grad_norm": "log_scalar", "loss": "log_scalar"}

_END = object()

class HookPoint(str, enum.Enum):
    """The 18 points of the training step where :meth:`Trainer.register_op` attaches an op.

    A ``str`` enum whose values are TorchRL's destination names, so ``register_op(HookPoint.PRE_EPOCH, op)``
    and TorchRL's ``register_op("pre_epoch", op)`` are the same call.

    Examples:
        >>> HookPoint("pre_epoch") is HookPoint.PRE_EPOCH, HookPoint.PRE_EPOCH == "pre_epoch"
        (True, True)
    """

    BATCH_PROCESS = "batch_process"
    PRE_OPTIM_STEPS = "pre_optim_steps"
    PROCESS_OPTIM_BATCH = "process_optim_batch"
    POST_LOSS = "post_loss"
    PROCESS_LOSS = "process_loss"
    OPTIMIZER = "optimizer"
    POST_STEPS = "post_steps"
    POST_OPTIM = "post_optim"
    PRE_STEPS_LOG = "pre_steps_log"
    POST_STEPS_LOG = "post_steps_log"
    POST_OPTIM_LOG = "post_optim_log"
    PRE_EPOCH_LOG = "pre_epoch_log"
    POST_EPOCH_LOG = "post_epoch_log"
    POST_OPTIM_COMPLETE_LOG = "post_optim_complete_log"
    PRE_EPOCH = "pre_epoch"
    POST_EPOCH = "post_epoch"
    SETUP = "setup"
    SHUTDOWN = "shutdown"


#: TorchRL's name of a hook point, as accepted by :meth:`Trainer.register_op`.
HookPointName = Literal[
    "batch_process", "pre_optim_steps", "process_optim_batch", "post_loss", "process_loss", "optimizer",
    "post_steps", "post_optim", "pre_steps_log", "post_steps_log", "post_optim_log", "pre_epoch_log",
    "post_epoch_log", "post_optim_complete_log", "pre_epoch", "post_epoch", "setup", "shutdown",
]
#: Every hook destination accepted by :meth:`Trainer.register_op` (the values of :class:`HookPoint`).
HOOK_DESTINATIONS = tuple(point.value for point in HookPoint)
# Destinations whose ops receive the batch and may return a replacement for it.
_BATCH_TRANSFORMS = {"batch_process", "process_optim_batch", "post_loss", "pre_epoch"}
_LOGGING = {"pre_steps_log", "post_steps_log", "post_optim_log", "pre_epoch_log", "post_epoch_log"}


class LossAverage:
    """Averages the scalar entries of the loss TensorDicts of an optimisation loop.

    Examples:
        >>> avg = LossAverage()
        >>> avg.add(TensorDict({"loss": torch.tensor(1.0)}, []))
        >>> avg.add(TensorDict({"loss": torch.tensor(3.0)}, []))
        >>> avg.steps, float(avg.result()["loss"])
        (2, 2.0)
    """

    def __init__(self) -> None:
        self.steps = 0
        self._sums: dict[str, torch.Tensor] = {}
        self._counts: dict[str, int] = {}

    def add(self, losses: TensorDictBase) -> None:
        """Adds one step's losses (non-scalar entries are skipped)."""
        self.steps += 1
        for key, value in losses.items():
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                self._sums[key] = self._sums.get(key, 0.0) + value.float()
                self._counts[key] = self._counts.get(key, 0) + 1

    def result(self) -> TensorDict:
        """The averages, as a TensorDict of scalars."""
        return TensorDict({k: v / self._counts[k] for k, v in self._sums.items()}, [])


class Trainer:
    """Collects data, optimises a loss, and calls registered hooks at fixed points of the loop.

    The trainer builds nothing itself: replay buffers, value estimators, target updates, logging and
    evaluation are hooks (see :mod:`tdrl.trainers.hooks`) registered with :meth:`register_op`.

    Args:
        collector: an iterable of batches (a :class:`~tdrl.collectors.Collector`).
        total_frames: frames to collect before stopping.
        frame_skip: frames per env step (scales the frame count).
        optim_steps_per_batch: optimisation steps per epoch (``None``: until ``process_optim_batch`` raises
            ``StopIteration`` or returns ``None``).
        loss_module: maps a sub-batch to a TensorDict of ``"loss_*"`` entries.
        optimizer: when given, an :class:`OptimizerHook` is registered for it.
        optimization_stepper: replaces the loss/optimizer hooks with a single ``step(trainer, sub_batch)``.
        replay_buffer: kept for reference (hooks do the sampling).
        target_net_updater: kept for reference (register a :class:`TargetNetUpdaterHook` to use it).
        batch_size: kept for reference.
        learner_backend: only ``"local"`` (optimisation runs in this process).
        learner_backend_options, learner_poll_interval: accepted for TorchRL compatibility (Ray learner only).
        logger: a :class:`~tdrl.record.Logger`.
        clip_grad_norm: clip the total gradient norm (``True``) or each gradient value (``False``).
        clip_norm: the clipping threshold (``None``: no clipping).
        progress_bar: show a tqdm bar (frames, frames/s, ETA and the values logged with ``log_pbar``).
        seed: seeds the collector, torch, numpy and python.
        save_trainer_interval: frames between two checkpoints.
        log_interval: frames between two writes of the same key to the logger.
        save_trainer_file: checkpoint path (``None``: no checkpoints).
        checkpoint, checkpoint_rotation, checkpoint_metadata: TorchRL's ``Checkpoint`` objects, not supported
            (must be ``None``): ``save_trainer_file`` is tdrl's checkpoint mechanism.
        num_epochs: passes over each collected batch.
        async_collection: not supported by the single-process loop (must be ``False``).
        log_timings: register a :class:`LogTiming` hook (``time/...`` scalars).
        auto_log_optim_steps: log ``optim_steps`` and the averaged losses after each optimisation loop.
        timing_print_interval: tdrl extension: frames between two printed timing tables (``None``: never).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> batches = [TensorDict({"x": torch.ones(4, 1)}, [4]) for _ in range(3)]
        >>> class Collector(list):
        ...     init_random_frames = 0
        ...     def shutdown(self): pass
        ...     def set_seed(self, seed, static_seed=False): return seed
        >>> w = torch.nn.Parameter(torch.zeros(1))
        >>> loss = lambda td: TensorDict({"loss": ((td["x"] - w) ** 2).mean()}, [])
        >>> trainer = Trainer(collector=Collector(batches), total_frames=12, frame_skip=1,
        ...     optim_steps_per_batch=2, loss_module=loss, optimizer=torch.optim.SGD([w], lr=0.5),
        ...     progress_bar=False)
        >>> trainer.train()
        >>> trainer.collected_frames, trainer.optim_count
        (12, 6)
    """

    #: what ``total_frames`` and the progress bar count (offline trainers count gradient steps)
    _progress_unit = "frames"
    #: renders the progress-bar description from the values logged with ``log_pbar`` (``None``: ``key: value``
    #: pairs); a run folder sets :func:`~tdrl.trainers.run_logging.progress_text`
    pbar_format: Callable[[Mapping[str, Any]], str] | None = None

    #: frames counted per frame this process collects: the number of data-parallel learners, each collecting
    #: its own shard (tdrl.trainers.data_parallel), so that the counters and ``total_frames`` are global
    _frame_scale = 1

    def __init__(
        self,
        *,
        collector: Any,
        total_frames: int,
        frame_skip: int,
        optim_steps_per_batch: int | None,
        loss_module: Callable[[TensorDictBase], TensorDictBase],
        optimizer: optim.Optimizer | None = None,
        optimization_stepper: OptimizationStepper | None = None,
        replay_buffer: Any | None = None,
        target_net_updater: Any | None = None,
        batch_size: int | None = None,
        learner_backend: Literal["local"] = "local",
        learner_backend_options: dict[str, Any] | None = None,
        learner_poll_interval: float = 0.05,
        logger: Any | None = None,
        clip_grad_norm: bool = True,
        clip_norm: float | None = None,
        progress_bar: bool = True,
        seed: int | None = None,
        save_trainer_interval: int = 10000,
        log_interval: int = 10000,
        save_trainer_file: str | pathlib.Path | None = None,
        checkpoint: Any | None = None,
        checkpoint_rotation: Any | None = None,
        checkpoint_metadata: Callable[[Trainer], Mapping[str, Any]] | None = None,
        num_epochs: int = 1,
        async_collection: bool = False,
        log_timings: bool = False,
        auto_log_optim_steps: bool = True,
        timing_print_interval: int | None = None,
    ) -> None:
        if learner_backend != "local":
            raise ValueError(f"learner_backend: tdrl's Trainer optimises in-process ('local'), got {learner_backend!r}")
        if checkpoint is not None or checkpoint_rotation is not None or checkpoint_metadata is not None:
            raise ValueError(
                "checkpoint/checkpoint_rotation/checkpoint_metadata (TorchRL's Checkpoint objects) are not supported: "
                "use save_trainer_file (atomic, weights_only checkpoints) and load_from_file"
            )
        if learner_backend_options:
            raise ValueError("learner_backend_options only applies to learner_backend='ray', which tdrl does not run")
        del learner_poll_interval
        if async_collection:
            raise ValueError("async_collection=True needs an async collector; tdrl's Trainer loop is synchronous")
        if total_frames is None or total_frames <= 0:
            raise ValueError(f"total_frames must be a positive int, got {total_frames!r}")
        if num_epochs < 1:
            raise ValueError(f"num_epochs must be >= 1, got {num_epochs}")
        self.collector = collector
        self.total_frames = int(total_frames)
        self.frame_skip = frame_skip
        self.optim_steps_per_batch = optim_steps_per_batch
        self.loss_module = loss_module
        self.optimizer = optimizer
        self.optimization_stepper = optimization_stepper
        self.replay_buffer = replay_buffer
        self.target_net_updater = target_net_updater
        self.batch_size = batch_size
        self.learner_backend = learner_backend
        self.logger = logger
        self.clip_grad_norm = clip_grad_norm
        self.clip_norm = clip_norm
        self.progress_bar = bool(progress_bar) and _has_tqdm
        self.save_trainer_interval = save_trainer_interval
        self._log_interval = log_interval
        self.save_trainer_file = None if save_trainer_file is None else pathlib.Path(save_trainer_file)
        self.num_epochs = num_epochs
        self.async_collection = async_collection
        self.auto_log_optim_steps = auto_log_optim_steps
        self.timing_print_interval = timing_print_interval
        self.collected_frames = 0
        self._optim_count = 0
        self._last_log: dict[str, int] = {}
        self._last_save = 0
        self._last_timing_print = 0
        self._log_dict: dict[str, list] = defaultdict(list)
        self._pbar_str: dict[str, Any] = {}
        self._stop_training = False
        self._stop_reason: str | None = None
        self._ops: dict[str, list[tuple[Callable, dict]]] = {dest: [] for dest in HOOK_DESTINATIONS}
        self._modules: dict[str, Any] = {}
        self.seed = seed
        if seed is not None:
            self.set_seed()
        if optimization_stepper is not None:
            optimization_stepper.register(self)
        elif optimizer is not None:
            OptimizerHook(optimizer).register(self)
        if log_timings:
            LogTiming(prefix="time", percall=True, erase=False).register(self)

    # ------------------------------------------------------------------ public state for hooks
    @property
    def optim_count(self) -> int:
        """Optimisation steps taken so far (over every resumed session)."""
        return self._optim_count

    @property
    def log_history(self) -> Mapping[str, list]:
        """Every value logged so far in this session, by name (read-only view; hooks such as
        :class:`~tdrl.trainers.hooks.EarlyStopping` monitor it)."""
        return types.MappingProxyType(self._log_dict)

    # ------------------------------------------------------------------ registration
    def register_module(self, module_name: str, module: Any) -> None:
        """Adds ``module`` (anything with ``state_dict``/``load_state_dict``) to the checkpointed state."""
        if module_name in self._modules:
            raise RuntimeError(f"{module_name} is already registered, choose a different name.")
        self._modules[module_name] = module

    def register_op(self, dest: HookPoint | HookPointName, op: Callable, **kwargs: Any) -> None:
        """Calls ``op`` at the hook point ``dest`` (a :class:`HookPoint` or its TorchRL name), with ``kwargs``."""
        try:
            point = HookPoint(dest)
        except ValueError:
            raise RuntimeError(
                f"The hook collection {dest!r} is not recognised. Choose from {list(HOOK_DESTINATIONS)}") from None
        if not callable(op):
            raise TypeError(f"register_op({point.value!r}, ...) expects a callable, got {type(op).__name__}")
        self._ops[point.value].append((op, kwargs))

    register_hook = register_op

    def set_seed(self) -> None:
        """Seeds the collector's env, torch, numpy and python from :attr:`seed`."""
        seed = self.collector.set_seed(self.seed, static_seed=False)
        set_global_seed(int(seed if seed is not None else self.seed))

    def request_stop(self, reason: str | None = None) -> None:
        """Ends training after the current batch (a checkpoint is written first)."""
        self._stop_training = True
        self._stop_reason = reason

    # ------------------------------------------------------------------ hook runners
    def _run_transform(self, dest: str, batch: Any) -> Any:
        for op, kwargs in self._ops[dest]:
            out = op(batch, **kwargs)
            if isinstance(out, TensorDictBase):
                batch = out
        return batch

    def _run_plain(self, dest: str) -> None:
        for op, kwargs in self._ops[dest]:
            op(**kwargs)

    def _run_log(self, dest: str, batch: Any) -> None:
        with timeit("trainer/log", exclusive=True):
            for op, kwargs in self._ops[dest]:
                result = op(batch, **kwargs)
                if result is not None:
                    self._log(**result)

    def _process_batch_hook(self, batch: TensorDictBase) -> TensorDictBase:
        return self._run_transform("batch_process", batch)

    def _process_optim_batch_hook(self, batch: TensorDictBase) -> TensorDictBase:
        return self._run_transform("process_optim_batch", batch)

    def _optimizer_hook(self, losses: TensorDictBase) -> TensorDictBase:
        for i, (op, kwargs) in enumerate(self._ops["optimizer"]):
            out = op(losses, self.clip_grad_norm, self.clip_norm, i, **kwargs)
            if isinstance(out, TensorDictBase):
                losses = out
        return losses.detach()

    def compute_loss(self, sub_batch: TensorDictBase, method: str | None = None) -> Any:
        """Evaluates the loss module (or one of its methods) on ``sub_batch``."""
        if method is None:
            return self.loss_module(sub_batch)
        return getattr(self.loss_module, method)(sub_batch)

    # ------------------------------------------------------------------ the loop
    def _frames_in(self, batch: TensorDictBase) -> int:
        mask = batch.get(("collector", "mask"), None)
        n = int(mask.sum()) if mask is not None else batch.numel()
        return n * self.frame_skip * self._frame_scale

    def train(self) -> None:
        """Runs until ``total_frames`` are collected (or a hook calls :meth:`request_stop`)."""
        pbar = None
        if self.progress_bar:
            # fixed-width counters, so that the bar does not shift as the numbers grow
            pbar = tqdm(total=self.total_frames, initial=self.collected_frames, unit=self._progress_unit,
                        unit_scale=True, dynamic_ncols=True,
                        bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt:>6}/{total_fmt:<6} "
                                   "[{elapsed}<{remaining}, {rate_fmt:>14}]")
            self._pbar = pbar
        self._run_plain("setup")
        iterator = iter(self.collector)
        try:
            while self.collected_frames < self.total_frames:
                with timeit("trainer/collect", exclusive=True), torch.no_grad():
                    batch = next(iterator, _END)
                if batch is _END:
                    break
                current = self.step(batch)
                if pbar is not None:
                    pbar.update(current)
                    self._pbar_description()
                self._maybe_print_timings()
                if self._stop_training:
                    if self._stop_reason:
                        tdrl_logger.info("Trainer stopping early: %s", self._stop_reason)
                    self.save_trainer(force_save=True)
                    break
                self.save_trainer(force_save=self.collected_frames >= self.total_frames)
            self._run_plain("shutdown")
        finally:
            if pbar is not None:
                pbar.close()
            self.collector.shutdown()

    def count_frames(self, batch: TensorDictBase | None) -> int:
        """Adds the frames of ``batch`` (its mask, when it has one) to :attr:`collected_frames`; returns them."""
        if batch is None:
            # The collector wrote the batch to its own replay buffer: count what it collected.
            current = int(getattr(self.collector, "requested_frames_per_batch", 0)) * self.frame_skip * self._frame_scale
        else:
            current = self._frames_in(batch)
        self.collected_frames += current
        return current

    def learning_started(self) -> bool:
        """Whether the collector's random warm-up (``init_random_frames``) is over."""
        return self.collected_frames >= getattr(self.collector, "init_random_frames", 0) * self._frame_scale

    def step(self, batch: TensorDictBase | None) -> int:
        """One iteration on a collected batch, top to bottom; returns the frames it counted.

        The generic step: ``batch_process`` ops -> count frames -> ``pre_steps_log`` -> :meth:`optim_steps`
        (after the warm-up) -> ``post_steps`` -> ``post_steps_log``. Algorithm trainers override it with
        their own explicit step (e.g. :meth:`~tdrl.trainers.algorithms.OnPolicyTrainer.step`).
        """
        if batch is not None:
            batch = self._process_batch_hook(batch)
        current = self.count_frames(batch)
        self._run_log("pre_steps_log", batch)
        if self.learning_started():
            with timeit("trainer/optim", exclusive=True):
                self.optim_steps(batch)
        self._run_plain("post_steps")
        self._run_log("post_steps_log", batch)
        return current

    def optim_steps(self, batch: TensorDictBase) -> None:
        """One optimisation loop over ``batch``: ``num_epochs`` epochs of ``optim_steps_per_batch`` steps."""
        average = LossAverage()
        self._run_plain("pre_optim_steps")
        for _ in range(self.num_epochs):
            self._run_log("pre_epoch_log", batch)
            epoch_batch = self._run_transform("pre_epoch", batch)
            steps: Iterable[int] = (
                range(self.optim_steps_per_batch) if self.optim_steps_per_batch is not None else iter(int, 1)
            )
            for _ in steps:
                try:
                    sub_batch = self._process_optim_batch_hook(epoch_batch)
                except StopIteration:
                    break
                if sub_batch is None:
                    break
                average.add(self.optimization_step(sub_batch))
            self._run_log("post_epoch_log", batch)
            self._run_plain("post_epoch")
        self.log_optim_steps(average)

    def optimization_step(self, sub_batch: TensorDictBase) -> TensorDictBase:
        """One gradient step on ``sub_batch``; returns the detached losses.

        With an ``optimization_stepper``, its ``step``; else loss -> :meth:`update_priorities` -> ``post_loss``
        -> ``process_loss`` -> ``optimizer`` ops. Then :meth:`update_target_networks`, ``post_optim`` and
        ``post_optim_log``.
        """
        self._optim_count += 1
        if self.optimization_stepper is not None:
            losses = self.optimization_stepper.step(self, sub_batch)
        else:
            losses = self.compute_loss(sub_batch)
            self.update_priorities(sub_batch)
            self._run_transform("post_loss", sub_batch)
            for op, kwargs in self._ops["process_loss"]:
                out = op(sub_batch, losses, **kwargs)
                if isinstance(out, TensorDictBase):
                    losses = out
            losses = self._optimizer_hook(losses)
        self.update_target_networks()
        self._run_plain("post_optim")
        self._run_log("post_optim_log", sub_batch)
        return losses.detach()

    def update_priorities(self, sub_batch: TensorDictBase) -> None:
        """After the loss: writes a prioritised buffer's new priorities (algorithm trainers; here nothing)."""
        del sub_batch

    def update_target_networks(self) -> None:
        """After the optimiser: moves the target networks (algorithm trainers; the generic trainer leaves
        ``target_net_updater`` to a registered :class:`~tdrl.trainers.hooks.TargetNetUpdaterHook`)."""

    def log_optim_steps(self, average: LossAverage) -> None:
        """Logs the losses averaged over an optimisation loop (``post_optim_complete_log``), if it took a step."""
        if average.steps:
            self._post_optim_complete_log(self._optim_count, average.result())

    def _post_optim_complete_log(self, optim_steps: int, average: TensorDictBase | None) -> None:
        with timeit("trainer/log", exclusive=True):
            for op, kwargs in self._ops["post_optim_complete_log"]:
                result = op(optim_steps, average, **kwargs)
                if result is not None:
                    self._log(**result)
            if self.auto_log_optim_steps:
                scalars = {}
                if average is not None:
                    scalars = {k: v for k, v in average.items() if isinstance(v, torch.Tensor) and v.numel() == 1}
                self._log(optim_steps=optim_steps, **scalars)

    # ------------------------------------------------------------------ logging
    def _log(self, log_pbar: bool = False, **kwargs: Any) -> None:
        frames = self.collected_frames
        for key, item in kwargs.items():
            self._log_dict[key].append(item)
            method = LOGGER_METHODS.get(key, "log_scalar")
            if isinstance(item, torch.Tensor):
                if item.numel() != 1:
                    continue
                item = item.item()
            if self.logger is not None and (key not in self._last_log or frames - self._last_log[key] >= self._log_interval):
                self._last_log[key] = frames
                getattr(self.logger, method)(key, item, step=frames)
            if log_pbar:
                self._pbar_str[key] = item

    def _pbar_description(self) -> None:
        if self.pbar_format is not None:
            self._pbar.set_description(self.pbar_format(self._pbar_str), refresh=False)
            return
        parts = []
        for key in sorted(self._pbar_str):
            value = self._pbar_str[key]
            parts.append(f"{key}: {value:9.4g}" if isinstance(value, float) else f"{key}: {value}")
        self._pbar.set_description(", ".join(parts), refresh=False)

    def _maybe_print_timings(self) -> None:
        interval = self.timing_print_interval
        if not interval or self.collected_frames - self._last_timing_print < interval:
            return
        self._last_timing_print = self.collected_frames
        table = timing_table()
        if self.progress_bar:
            tqdm.write(table)
        else:
            print(table, flush=True)

    # ------------------------------------------------------------------ state and checkpoints
    def _get_state(self) -> dict[str, Any]:
        return {
            "collected_frames": self.collected_frames,
            "_last_log": dict(self._last_log),
            "_last_save": self._last_save,
            "_optim_count": self._optim_count,
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue training: counters, loss module, collector, hooks, RNG states."""
        state: dict[str, Any] = {"state": self._get_state(), "rng": get_rng_state(),
                                 "timings": timeit.state_dict(prefix="trainer/")}
        if isinstance(self.loss_module, torch.nn.Module):
            state["loss_module"] = self.loss_module.state_dict()
        if hasattr(self.collector, "state_dict"):
            state["collector"] = self.collector.state_dict()
        if self.logger is not None and hasattr(self.logger, "state_dict"):
            state["logger"] = self.logger.state_dict()
        state["modules"] = {name: module.state_dict() for name, module in self._modules.items()}
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict`: counters, modules, hooks and RNG states."""
        counters = state_dict["state"]
        self.collected_frames = int(counters["collected_frames"])
        self._last_log = dict(counters["_last_log"])
        self._last_save = int(counters["_last_save"])
        self._optim_count = int(counters["_optim_count"])
        if "loss_module" in state_dict and isinstance(self.loss_module, torch.nn.Module):
            self.loss_module.load_state_dict(state_dict["loss_module"])
        if "collector" in state_dict and hasattr(self.collector, "load_state_dict"):
            self.collector.load_state_dict(state_dict["collector"])
        if "logger" in state_dict and self.logger is not None and hasattr(self.logger, "load_state_dict"):
            self.logger.load_state_dict(state_dict["logger"])
        saved = state_dict.get("modules", {})
        missing = sorted(set(self._modules) - set(saved))
        if missing:
            raise KeyError(f"the checkpoint has no state for the registered modules {missing} (saved: {sorted(saved)})")
        for name, module in self._modules.items():
            module.load_state_dict(saved[name])
        if "rng" in state_dict:
            set_rng_state(state_dict["rng"])
        if "timings" in state_dict:  # the phase times of the sessions before this one
            timeit.load_state_dict(state_dict["timings"])

    def save_trainer(self, force_save: bool = False) -> None:
        """Writes a checkpoint if ``save_trainer_interval`` frames passed since the last one (or if forced)."""
        if self.save_trainer_file is None:
            return
        if not force_save and self.collected_frames - self._last_save < self.save_trainer_interval:
            return
        self._last_save = self.collected_frames
        with timeit("trainer/checkpoint", exclusive=True):
            save_checkpoint(self.state_dict(), self.save_trainer_file)

    def load_from_file(self, file: str | os.PathLike, **kwargs: Any) -> Trainer:
        """Loads a checkpoint written by :meth:`save_trainer` (``weights_only=True``) and returns ``self``."""
        del kwargs
        self.load_state_dict(load_checkpoint(file))
        return self

    def shutdown(self) -> None:
        """Shuts the collector down."""
        self.collector.shutdown()

    def __repr__(self) -> str:
        body = "\n".join(
            indent(f"{name}={value}", 4 * " ")
            for name, value in (("loss", self.loss_module), ("collector", self.collector),
                                ("optimizer", self.optimizer), ("logger", self.logger))
        )
        return f"Trainer(\n{body})"


def timing_table(prefix: str = "trainer/") -> str:
    """The trainer's phases (total seconds and share) as a printable one-line table.

    Examples:
        >>> timeit.erase()
        >>> with timeit("trainer/collect", exclusive=True):
        ...     pass
        >>> timing_table().startswith("time: collect")
        True
    """
    totals = {k[len(prefix):]: v for k, v in timeit.todict(percall=False).items() if k.startswith(prefix)}
    grand = sum(totals.values()) or math.inf
    cells = [f"{name} {sec:.1f}s ({100 * sec / grand:.0f}%)" for name, sec in sorted(totals.items(), key=lambda kv: -kv[1])]
    return "time: " + ", ".join(cells) if cells else "time: -"

