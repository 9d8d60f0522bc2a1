"""The GRPO trainer: collect groups of answers, compute group-relative advantages, update on tokens.

One iteration, readable top to bottom in :meth:`GRPOTrainer.train`:

1. the :class:`~tdrl.collectors.llm.LLMCollector` plays one batch of dialog turns (``group_size`` answers per
   prompt) into the replay buffer, where :class:`~tdrl.objectives.llm.MCAdvantage` writes each complete
   group with its normalised advantage;
2. ``epochs`` passes of minibatch updates of the loss (:class:`~tdrl.objectives.llm.GRPOLoss` by default);
3. the buffer is emptied (on-policy) and the collector's policy version is incremented.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl._utils import logger as _log
from tdrl.trainers.checkpoint import get_rng_state, save_checkpoint, set_rng_state

__all__ = ["GRPOTrainer", "total_loss"]


def total_loss(output: Any) -> torch.Tensor:  # noqa: ANN401
    """The sum of the ``loss_*`` terms of a loss output (a TensorDict or an ``LLMLossOutput``).

    Examples:
        >>> from tensordict import TensorDict
        >>> total_loss(TensorDict(loss_a=torch.tensor(1.0), ESS=torch.tensor(5.0), loss_b=torch.tensor(2.0)))
        tensor(3.)
    """
    keys = [k for k in output.keys() if isinstance(k, str) and k.startswith("loss_")]
    values = [output.get(k) for k in keys if output.get(k) is not None]
    if not values:
        raise KeyError(f"the loss output has no loss_* term (keys: {sorted(output.keys())})")
    return torch.stack([v.sum() for v in values]).sum()


class GRPOTrainer:
    """Trains an LLM policy with a GRPO-family loss on the collector's grouped answers.

    Args:
        collector: an ``LLMCollector`` writing into ``replay_buffer`` (built with ``replay_buffer=...``).
        loss_module: the token loss (``GRPOLoss``, ``DAPO``, ``CISPOLoss`` or ``ClipPPOLoss`` on an LLM policy);
            its actor shares the model with the collector's policy.
        optimizer: the optimizer of the loss's parameters.
        replay_buffer: the buffer holding the current groups (with ``MCAdvantage`` appended).

    Keyword Args:
        total_frames: stop once this many answers (dialog turns) were trained on (``-1`` / ``None``: when the
            collector stops).
        num_epochs: passes over each batch (default 1).
        batch_size: answers per gradient step (default: the whole batch).
        clip_norm: gradient-norm clip (default 1.0; ``None``: no clip).
        log_interval: log every this many iterations (0: never).
        seed: seeds torch before training, when given.
        logger: a tdrl logger (``log_scalar(name, value, step)``), optional.
        on_iteration: called with each iteration's metrics (e.g. to record a learning curve).
        save_trainer_file: where :meth:`train` writes a checkpoint (:meth:`state_dict`, atomic, with a
            ``.prev`` copy) every ``save_interval`` iterations and at the end; ``None``: never.
        save_interval: iterations between checkpoints (default 1).

    Examples:
        >>> total_loss.__name__  # the trainer sums the loss_* terms of the loss output
        'total_loss'
    """

    def __init__(
        self,
        *,
        collector: Any,  # noqa: ANN401
        total_frames: int | None = None,
        loss_module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        replay_buffer: Any,  # noqa: ANN401
        batch_size: int | None = None,
        num_epochs: int = 1,
        clip_norm: float | None = 1.0,
        log_interval: int = 1,
        seed: int | None = None,
        logger: Any = None,  # noqa: ANN401
        on_iteration: Callable[[dict[str, float]], None] | None = None,
        save_trainer_file: str | os.PathLike | None = None,
        save_interval: int = 1,
    ) -> None:
        if getattr(collector, "replay_buffer", None) is not replay_buffer:
            raise ValueError("GRPOTrainer: the collector must write into replay_buffer (LLMCollector(replay_buffer=rb))")
        if num_epochs < 1:
            raise ValueError(f"num_epochs must be >= 1, got {num_epochs}")
        self.collector, self.loss_module, self.optimizer = collector, loss_module, optimizer
        self.replay_buffer = replay_buffer
        self.num_epochs, self.batch_size, self.clip_norm = num_epochs, batch_size, clip_norm
        self.total_frames = None if total_frames is None or total_frames < 0 else int(total_frames)
        self.log_interval, self.seed = log_interval, seed
        self.logger, self.on_iteration = logger, on_iteration
        if save_interval < 1:
            raise ValueError(f"save_interval must be >= 1, got {save_interval}")
        self.save_trainer_file = None if save_trainer_file is None else Path(save_trainer_file)
        self.save_interval = int(save_interval)
        self.history: list[dict[str, float]] = []
        self.collected_frames = 0
        self._stop_reason: str | None = None
        self._params = [p for p in loss_module.parameters() if p.requires_grad]

    def _update(self, batch: TensorDictBase) -> dict[str, float]:
        """``epochs`` passes of minibatch steps on ``batch``; the metrics of the last step."""
        n = batch.shape[0]
        size = self.batch_size or n
        metrics: dict[str, float] = {}
        for _ in range(self.num_epochs):
            for idx in torch.randperm(n).split(size):
                out = self.loss_module(batch[idx])
                loss = total_loss(out)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if self.clip_norm is not None:
                    metrics["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self._params, self.clip_norm))
                self.optimizer.step()
                metrics["loss"] = float(loss.detach())
                for key in ("ESS", "clip_fraction", "kl_approx", "entropy", "kl_to_ref"):
                    value = out.get(key, None) if hasattr(out, "get") else getattr(out, key, None)
                    if value is not None:
                        metrics[key] = float(value)
        return metrics

    def train(self) -> list[dict[str, float]]:
        """Runs the loop; returns one metrics dict per iteration (``reward`` is the batch's mean reward)."""
        if self.seed is not None and not self.history:  # a resumed trainer keeps its restored RNG
            torch.manual_seed(self.seed)
        if self.total_frames is not None and self.collected_frames >= self.total_frames:
            return self.history
        self._stop_reason = None
        t0 = time.perf_counter() - (self.history[-1]["wall_time_s"] if self.history else 0.0)
        for _ in self.collector:
            if len(self.replay_buffer) == 0:  # groups not complete yet
                continue
            batch = self.replay_buffer[:]
            self.collected_frames += batch.shape[0]
            reward = float(batch.get(("next", "reward"), as_padded_tensor=True).float().mean())
            metrics = {"iteration": float(len(self.history)), "reward": reward, "answers": float(batch.shape[0]),
                       "frames": float(self.collected_frames)}
            metrics.update(self._update(batch))
            self.replay_buffer.empty()
            self.collector.update_policy_weights_()
            metrics["wall_time_s"] = time.perf_counter() - t0
            self.history.append(metrics)
            self._report(metrics)
            done = self.total_frames is not None and self.collected_frames >= self.total_frames
            if done or self._stop_reason is not None or len(self.history) % self.save_interval == 0:
                self.save()
            if done or self._stop_reason is not None:
                break
        return self.history

    def request_stop(self, reason: str = "stop requested") -> None:
        """Ends :meth:`train` after the iteration in progress (which is checkpointed first)."""
        self._stop_reason = reason

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs: the loss (the model), the optimizer, counters, history, RNG, policy version.

        Examples:
            >>> sorted(GRPOTrainer.state_dict.__annotations__)  # a plain-data dict (weights_only loadable)
            ['return']
        """
        return {"loss_module": self.loss_module.state_dict(), "optimizer": self.optimizer.state_dict(),
                "collected_frames": self.collected_frames, "history": [dict(h) for h in self.history],
                "policy_version": int(getattr(self.collector, "policy_version", 0) or 0),
                "rng": get_rng_state()}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict` (the model weights also reach the collector's policy)."""
        missing = [k for k in ("loss_module", "optimizer", "collected_frames", "history") if k not in state_dict]
        if missing:
            raise KeyError(f"GRPOTrainer.load_state_dict: the state has no {missing} (keys: {sorted(state_dict)})")
        self.loss_module.load_state_dict(state_dict["loss_module"])
        self.optimizer.load_state_dict(state_dict["optimizer"])
        self.collected_frames = int(state_dict["collected_frames"])
        self.history = [dict(h) for h in state_dict["history"]]
        if "rng" in state_dict:
            set_rng_state(state_dict["rng"])
        self.collector.update_policy_weights_()  # the restored weights reach the collector's policy
        version = getattr(self.collector, "policy_version", None)
        while version is not None and version < int(state_dict.get("policy_version", 0)):
            self.collector.increment_version()  # the version counts the updates of the whole run
            version = self.collector.policy_version

    def save(self) -> Path | None:
        """Writes :meth:`state_dict` to ``save_trainer_file`` (nothing when it is ``None``)."""
        if self.save_trainer_file is None:
            return None
        return save_checkpoint({"state": self.state_dict(), "frames": self.collected_frames}, self.save_trainer_file)

    def _report(self, metrics: dict[str, float]) -> None:
        step = len(self.history)
        if self.logger is not None:
            for key, value in metrics.items():
                self.logger.log_scalar(key, value, step=step)
        if self.on_iteration is not None:
            self.on_iteration(metrics)
        if self.log_interval and step % self.log_interval == 0:
            _log.info("GRPO iteration %d: reward %.3f loss %.4f", step, metrics["reward"], metrics.get("loss", 0.0))
