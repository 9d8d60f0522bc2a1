"""Hooks around the optimisation step: optimiser, LR schedule, targets, value estimates, weights, stopping."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import torch
from tensordict import TensorDict, TensorDictBase
from torch import optim

from tdrl.objectives import TargetNetUpdater
from tdrl.trainers.hooks.base import TrainerHookBase, grad_norm_and_clip

if TYPE_CHECKING:
    from tdrl.trainers.trainer import Trainer

__all__ = [
    "ClearCudaCache",
    "EarlyStopping",
    "LRSchedulerHook",
    "OptimizerHook",
    "TargetNetUpdaterHook",
    "UpdateWeights",
    "ValueEstimatorHook",
]


class OptimizerHook(TrainerHookBase):
    """Back-propagates the sum of some loss entries and steps ``optimizer`` (destination ``optimizer``).

    Args:
        optimizer: the optimiser.
        loss_components: the loss keys it optimises (``None``: every key starting with ``"loss"``).

    Examples:
        >>> w = torch.nn.Parameter(torch.ones(1))
        >>> hook = OptimizerHook(torch.optim.SGD([w], lr=0.1))
        >>> out = hook(TensorDict({"loss_a": (2 * w).sum()}, []), True, None, 0)
        >>> round(float(w.detach()), 2), float(out["grad_norm_0"])
        (0.8, 2.0)
    """

    def __init__(self, optimizer: optim.Optimizer, loss_components: Sequence[str] | None = None) -> None:
        if loss_components is not None and not loss_components:
            raise ValueError("loss_components cannot be empty; pass None to optimise every 'loss*' entry")
        self.optimizer = optimizer
        self.loss_components = None if loss_components is None else set(loss_components)

    def __call__(self, losses_td: TensorDictBase, clip_grad_norm: bool, clip_norm: float | None, index: int) -> TensorDictBase:
        if self.loss_components is None:
            items = [v for k, v in losses_td.items() if k.startswith("loss")]
        else:
            missing = self.loss_components - set(losses_td.keys())
            if missing:
                raise KeyError(f"OptimizerHook: the loss has no {sorted(missing)} (it has {sorted(losses_td.keys())})")
            items = [losses_td.get(k) for k in self.loss_components]
        if not items:
            raise KeyError(f"OptimizerHook: no 'loss*' entry in the loss output {sorted(losses_td.keys())}")
        sum(items).backward()
        norm = grad_norm_and_clip(self.optimizer, clip_grad_norm, clip_norm)
        losses_td.set(f"grad_norm_{index}", torch.tensor(norm))
        self.optimizer.step()
        self.optimizer.zero_grad()
        return losses_td

    def state_dict(self) -> dict[str, Any]:
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if state_dict:
            self.optimizer.load_state_dict(state_dict)

    def register(self, trainer: Trainer, name: str = "optimizer") -> None:
        trainer.register_op("optimizer", self)
        trainer.register_module(name, self)


class LRSchedulerHook(TrainerHookBase):
    """Steps a learning-rate scheduler per collected batch (``"batch"``) or per optimiser step (``"optim"``).

    A batch on which no optimisation ran (warm-up) does not step the scheduler.

    Examples:
        >>> w = torch.nn.Parameter(torch.ones(1))
        >>> opt = torch.optim.SGD([w], lr=1.0)
        >>> hook = LRSchedulerHook(torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5))
        >>> opt.step()
        >>> hook()
        >>> opt.param_groups[0]["lr"]
        0.5
    """

    def __init__(self, scheduler: Any, interval: Literal["batch", "optim"] = "batch") -> None:
        if interval not in ("batch", "optim"):
            raise ValueError(f"interval must be 'batch' or 'optim', got {interval!r}")
        self.scheduler = scheduler
        self.interval = interval
        self._trainer_ref: Callable[[], Trainer | None] | None = None
        self._last_optim_count = 0

    def __call__(self, batch: TensorDictBase | None = None) -> None:
        trainer = self._trainer_ref() if self._trainer_ref is not None else None
        if trainer is not None:
            if trainer.optim_count == self._last_optim_count:
                return
            self._last_optim_count = trainer.optim_count
        self.scheduler.step()

    def state_dict(self) -> dict[str, Any]:
        return {"scheduler": self.scheduler.state_dict(), "last_optim_count": self._last_optim_count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.scheduler.load_state_dict(state_dict["scheduler"])
        self._last_optim_count = state_dict.get("last_optim_count", 0)

    def attach(self, trainer: Trainer) -> None:
        """Steps only when ``trainer`` took an optimisation step since the last call (as registered)."""
        self._trainer_ref = weakref.ref(trainer)

    def register(self, trainer: Trainer, name: str = "lr_scheduler") -> None:
        self.attach(trainer)
        trainer.register_op("post_optim" if self.interval == "optim" else "post_steps", self)
        trainer.register_module(name, self)


class TargetNetUpdaterHook(TrainerHookBase):
    """Steps a :class:`~tdrl.objectives.SoftUpdate`/``HardUpdate`` (default destination ``post_steps``).

    Examples:
        >>> import torch
        >>> from tdrl.modules import QValueActor
        >>> from tdrl.objectives import DQNLoss, SoftUpdate
        >>> loss = DQNLoss(QValueActor(torch.nn.Linear(3, 2), action_space="one_hot"), delay_value=True)
        >>> hook = TargetNetUpdaterHook(SoftUpdate(loss, tau=1.0))  # tau=1: the target copies the weights
        >>> with torch.no_grad():
        ...     _ = loss.value_network_params["module", "0", "module", "weight"].add_(1.0)
        >>> hook()
        >>> bool((loss.target_value_network_params == loss.value_network_params).all())
        True
    """

    def __init__(self, target_params_updater: TargetNetUpdater) -> None:
        if not isinstance(target_params_updater, TargetNetUpdater):
            raise ValueError(
                f"TargetNetUpdaterHook expects a TargetNetUpdater (SoftUpdate, HardUpdate), "
                f"got {type(target_params_updater).__name__}"
            )
        self.target_params_updater = target_params_updater

    def __call__(self, tensordict: TensorDictBase | None = None) -> None:
        self.target_params_updater.step()

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        del state_dict

    def register(self, trainer: Trainer, name: str = "target_net_updater") -> None:
        trainer.register_op("post_steps", self)
        trainer.register_module(name, self)


class ValueEstimatorHook(TrainerHookBase):
    """Writes advantages/value targets on the whole batch before each epoch (destination ``pre_epoch``).

    Args:
        value_estimator: e.g. :class:`~tdrl.objectives.value.GAE`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.objectives.value import TD0Estimator
        >>> hook = ValueEstimatorHook(TD0Estimator(gamma=0.9, value_network=None))
        >>> batch = TensorDict({"state_value": torch.zeros(3, 1), "next": {"state_value": torch.ones(3, 1),
        ...     "reward": torch.ones(3, 1), "done": torch.zeros(3, 1, dtype=torch.bool)}}, [3])
        >>> hook(batch)["value_target"].flatten()
        tensor([1.9000, 1.9000, 1.9000])
    """

    def __init__(self, value_estimator: Callable[[TensorDictBase], TensorDictBase]) -> None:
        self.value_estimator = value_estimator

    def __call__(self, batch: TensorDictBase | None) -> TensorDictBase | None:
        if batch is None:
            return None
        with torch.no_grad():
            return self.value_estimator(batch)

    def state_dict(self) -> dict[str, Any]:
        if isinstance(self.value_estimator, torch.nn.Module):
            return {"value_estimator": self.value_estimator.state_dict()}
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if "value_estimator" in state_dict and isinstance(self.value_estimator, torch.nn.Module):
            self.value_estimator.load_state_dict(state_dict["value_estimator"])

    def register(self, trainer: Trainer, name: str = "value_estimator") -> None:
        trainer.register_op("pre_epoch", self)
        trainer.register_module(name, self)


class ClearCudaCache(TrainerHookBase):
    """Empties the CUDA cache every ``interval`` calls (destination ``pre_optim_steps``).

    Examples:
        >>> hook = ClearCudaCache(interval=2)
        >>> for _ in range(3):
        ...     hook()  # empties the cache on the 2nd call (a no-op without CUDA)
        >>> hook.state_dict()
        {'count': 3}
    """

    def __init__(self, interval: int) -> None:
        self.interval = interval
        self.count = 0

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1
        if self.count % self.interval == 0 and torch.cuda.is_available():
            torch.cuda.empty_cache()

    def state_dict(self) -> dict[str, Any]:
        return {"count": self.count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.count = state_dict["count"]

    def register(self, trainer: Trainer, name: str = "clear_cuda_cache") -> None:
        trainer.register_module(name, self)
        trainer.register_op("pre_optim_steps", self)


class UpdateWeights(TrainerHookBase):
    """Pushes the trained policy weights to the collector every ``update_weights_interval`` batches.

    Args:
        collector: the collector to update.
        update_weights_interval: batches (or optimiser steps) between updates.
        policy_weights_getter: returns the weights to push (``None``: the collector's own refresh).
        weight_update_map: ``{"policy": "loss_module.actor_network"}``-style paths from the trainer.
        trainer: needed with ``weight_update_map`` or ``interval_unit="optim_steps"``.
        sender: an object whose ``update_weights()`` does the push.
        interval_unit: ``"batches"`` (``post_steps``) or ``"optim_steps"`` (``post_optim``).

    Examples:
        >>> class Collector:  # records what reaches it
        ...     def update_policy_weights_(self, weights=None):
        ...         print("weights pushed")
        >>> hook = UpdateWeights(Collector(), update_weights_interval=2)
        >>> hook()
        >>> hook()
        weights pushed
    """

    def __init__(
        self,
        collector: Any = None,
        update_weights_interval: int = 1,
        policy_weights_getter: Callable[[], Any] | None = None,
        weight_update_map: dict[str, str] | None = None,
        trainer: Trainer | None = None,
        *,
        sender: Any = None,
        interval_unit: Literal["batches", "optim_steps"] = "batches",
    ) -> None:
        if update_weights_interval < 1:
            raise ValueError("update_weights_interval must be >= 1")
        if interval_unit not in ("batches", "optim_steps"):
            raise ValueError(f"interval_unit must be 'batches' or 'optim_steps', got {interval_unit!r}")
        if sender is None and collector is None:
            raise ValueError("either a collector or a sender must be provided")
        if sender is not None and (policy_weights_getter is not None or weight_update_map is not None):
            raise ValueError("sender is mutually exclusive with policy_weights_getter and weight_update_map")
        if (weight_update_map is not None or interval_unit == "optim_steps") and trainer is None:
            raise ValueError("trainer must be provided with weight_update_map or interval_unit='optim_steps'")
        self.collector = collector
        self.update_weights_interval = update_weights_interval
        self.policy_weights_getter = policy_weights_getter
        self.weight_update_map = weight_update_map
        self.trainer = trainer
        self.sender = sender
        self.interval_unit = interval_unit
        self.counter = 0
        self._last_update_count = 0

    def __call__(self) -> None:
        if self.interval_unit == "optim_steps":
            count = self.trainer.optim_count
            if count - self._last_update_count < self.update_weights_interval:
                return
            self._last_update_count = count
        else:
            self.counter += 1
            if self.counter % self.update_weights_interval:
                return
        if self.sender is not None:
            self.sender.update_weights()
        elif self.weight_update_map is not None:
            for source_path in self.weight_update_map.values():
                obj: Any = self.trainer
                for attr in source_path.split("."):
                    obj = getattr(obj, attr)
                self.collector.update_policy_weights_(TensorDict.from_module(obj))
        else:
            weights = self.policy_weights_getter() if self.policy_weights_getter is not None else None
            self.collector.update_policy_weights_(weights)

    def state_dict(self) -> dict[str, Any]:
        return {"counter": self.counter, "last_update_count": self._last_update_count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.counter = state_dict.get("counter", 0)
        self._last_update_count = state_dict.get("last_update_count", 0)

    def register(self, trainer: Trainer, name: str = "update_weights") -> None:
        if self.trainer is None:
            self.trainer = trainer
        trainer.register_module(name, self)
        trainer.register_op("post_optim" if self.interval_unit == "optim_steps" else "post_steps", self)


class EarlyStopping(TrainerHookBase):
    """Stops training when a logged metric stops improving (destination ``post_steps_log``).

    Args:
        monitor: the logged key to watch (default ``"r_evaluation"``).
        mode: ``"max"`` or ``"min"``.
        min_delta: smallest change that counts as an improvement.
        patience: frames without improvement before stopping.
        wait_for: frames before the first check.
        check_finite: stop when the metric becomes NaN/inf.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.trainers import Trainer
        >>> class Collector(list):  # a list of batches standing in for a collector
        ...     init_random_frames = 0
        ...     def shutdown(self): pass
        ...     def set_seed(self, seed, static_seed=False): return seed
        >>> w = torch.nn.Parameter(torch.zeros(1))
        >>> trainer = Trainer(collector=Collector(TensorDict({"x": torch.ones(4, 1)}, [4]) for _ in range(10)),
        ...     total_frames=40, frame_skip=1, optim_steps_per_batch=1, optimizer=torch.optim.SGD([w], lr=0.1),
        ...     loss_module=lambda td: TensorDict({"loss": ((td["x"] - w) ** 2).mean()}, []), progress_bar=False)
        >>> trainer.register_op("pre_steps_log", lambda batch: {"score": 1.0})  # a metric that never improves
        >>> stopper = EarlyStopping(monitor="score", patience=8, wait_for=0)
        >>> stopper.register(trainer)
        >>> trainer.train()
        >>> trainer.collected_frames, stopper.stop_reason
        (12, "monitored metric 'score' did not improve for 8 frames")
    """

    def __init__(
        self,
        *,
        monitor: str = "r_evaluation",
        mode: Literal["min", "max"] = "max",
        min_delta: float = 0.0,
        patience: int = 100_000,
        wait_for: int = 1_000_000,
        check_finite: bool = True,
    ) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be either 'min' or 'max', got {mode}.")
        if patience < 0 or wait_for < 0:
            raise ValueError(f"patience and wait_for must be >= 0, got {patience} and {wait_for}")
        self.monitor = monitor
        self.mode = mode
        self.min_delta = float(min_delta)
        self.patience = int(patience)
        self.wait_for = int(wait_for)
        self.check_finite = check_finite
        self.best_score: float | None = None
        self.stop_reason: str | None = None
        self._last_improvement_frame = 0
        self._trainer: Trainer | None = None

    def __call__(self, batch: TensorDictBase | None = None) -> None:
        trainer = self._trainer
        if trainer is None:
            raise RuntimeError("EarlyStopping is not attached to a trainer (call register(trainer))")
        values = trainer.log_history.get(self.monitor)
        if not values:
            raise RuntimeError(
                f"EarlyStopping could not find the monitored metric {self.monitor!r}; logged keys: {sorted(trainer.log_history)}"
            )
        score = float(values[-1])
        frame = int(trainer.collected_frames)
        if frame < self.wait_for:
            return
        if self.check_finite and not math.isfinite(score):
            self._stop(trainer, f"monitored metric {self.monitor!r} became non-finite ({score})")
            return
        better = self.best_score is None or (
            score > self.best_score + self.min_delta if self.mode == "max" else score < self.best_score - self.min_delta
        )
        if better:
            self.best_score = score
            self._last_improvement_frame = frame
        elif frame - self._last_improvement_frame >= self.patience:
            self._stop(trainer, f"monitored metric {self.monitor!r} did not improve for {frame - self._last_improvement_frame} frames")

    def _stop(self, trainer: Trainer, reason: str) -> None:
        self.stop_reason = reason
        trainer.request_stop(reason)

    def state_dict(self) -> dict[str, Any]:
        return {"best_score": self.best_score, "stop_reason": self.stop_reason,
                "last_improvement_frame": self._last_improvement_frame}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.best_score = state_dict.get("best_score")
        self.stop_reason = state_dict.get("stop_reason")
        self._last_improvement_frame = state_dict.get("last_improvement_frame", 0)

    def register(self, trainer: Trainer, name: str = "early_stopping") -> None:
        self._trainer = trainer
        trainer.register_op("post_steps_log", self)
        trainer.register_module(name, self)
