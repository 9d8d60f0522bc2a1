"""DreamerV3 training pieces: its optimizer (adaptive clipping, RMS scaling, momentum), the learner step and the
replay-ratio schedule.

Hafner et al., "Mastering Diverse Domains through World Models" (2023), https://arxiv.org/abs/2301.04104.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import torch
from tensordict import TensorDictBase
from tensordict.nn import CudaGraphModule

from tdrl.checkpoint.adapters import GlobalRNGState
from tdrl.modules.models.rssm_v3 import RSSMRolloutV3
from tdrl.objectives.dreamer_v3 import DreamerV3Loss
from tdrl.objectives.utils import TargetNetUpdater
from tdrl.trainers.hooks import OptimizationStepper

if TYPE_CHECKING:
    from tdrl.trainers import Trainer

__all__ = ["DreamerV3OptimizationStepper", "DreamerV3Optimizer", "DreamerV3UpdateRatio"]


class DreamerV3Optimizer(torch.optim.Optimizer):
    """DreamerV3's optimizer: each gradient is clipped to ``agc`` times its parameter's norm (at least
    ``parameter_norm_min``), divided by the bias-corrected RMS of past gradients, then averaged by a
    bias-corrected momentum; the learning rate warms up linearly from 0 over ``warmup_steps`` updates.

    Moments are kept in float32; parameters without a gradient are skipped; a step without any gradient raises.

    Args:
        parameters: parameters or parameter groups (a group's options override the defaults; each group counts
            its own steps).

    Keyword Args:
        lr: learning rate after warm-up (default ``4e-5``).
        agc: adaptive clipping ratio (0 disables clipping; default 0.3).
        parameter_norm_min: floor of the parameter norms (default ``1e-3``).
        beta1: momentum decay (default 0.9).
        beta2: squared-gradient decay (default 0.999).
        eps: added to the RMS (default ``1e-20``).
        warmup_steps: warm-up length (0 disables it; default 1000).

    Examples:
        >>> w = torch.nn.Parameter(torch.ones(3))
        >>> opt = DreamerV3Optimizer([w], lr=0.1, warmup_steps=0)
        >>> (w * torch.tensor([1.0, -2.0, 0.0])).sum().backward()
        >>> _ = opt.step()
        >>> w.data
        tensor([0.9000, 1.1000, 1.0000])
    """

    def __init__(
        self,
        parameters: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        *,
        lr: float = 4e-5,
        agc: float = 0.3,
        parameter_norm_min: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-20,
        warmup_steps: int = 1000,
    ) -> None:
        defaults = {"lr": lr, "agc": agc, "parameter_norm_min": parameter_norm_min, "beta1": beta1, "beta2": beta2,
                    "eps": eps, "warmup_steps": warmup_steps, "step": 0}
        super().__init__(parameters, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:  # type: ignore[override]
        """Updates the parameters that have gradients; returns the closure's loss (if a closure is given)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if not any(p.grad is not None for group in self.param_groups for p in group["params"]):
            raise RuntimeError("DreamerV3Optimizer.step(): no parameter has a gradient (call backward() first)")
        for group in self.param_groups:
            group["step"] += 1
            self._update_group(group)
        return loss

    def _update_group(self, group: dict[str, Any]) -> None:
        step, warmup = group["step"], group["warmup_steps"]
        lr = group["lr"] * (min(1.0, (step - 1) / warmup) if warmup else 1.0)
        b1, b2 = group["beta1"], group["beta2"]
        for p in group["params"]:
            if p.grad is None:
                continue
            grad = p.grad.float()
            if group["agc"]:
                limit = torch.linalg.vector_norm(p.detach().float()).clamp_min(group["parameter_norm_min"])
                limit = limit * group["agc"]
                grad = grad * (limit / torch.maximum(torch.linalg.vector_norm(grad), limit))
            state = self.state[p]
            if not state:
                state["rms"] = torch.zeros_like(p, dtype=torch.float32)
                state["momentum"] = torch.zeros_like(p, dtype=torch.float32)
            rms, momentum = state["rms"], state["momentum"]
            rms.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            normalized = grad / ((rms / (1 - b2**step)).sqrt() + group["eps"])
            momentum.mul_(b1).add_(normalized, alpha=1 - b1)
            p.add_((momentum / (1 - b1**step)).to(p.dtype), alpha=-lr)


class DreamerV3OptimizationStepper(OptimizationStepper):
    """One DreamerV3 learner update: the :class:`~tdrl.objectives.DreamerV3Loss` forward/backward (optionally
    compiled and, on CUDA, captured in a CUDA graph), the optimizer step and the target update.

    With compilation or capture, call :meth:`warmup` with a representative sample first (it restores the
    buffers and the global RNG state and never steps the optimizer). The detached posterior features are
    written to the sample's ``replay_context`` key.

    Args:
        loss_module: the learner objective.
        optimizer: owns every learner parameter once.
        target_updater: stepped after each optimizer step (e.g. the slow critic's
            :class:`~tdrl.objectives.SoftUpdate`).

    Keyword Args:
        compile_train_step: compile the forward/backward (``None``: on CUDA only).
        compile_mode: the :func:`torch.compile` mode (default ``"default"``).
        cudagraph: capture the forward/backward on CUDA (``None``: on CUDA only).
        rssm_scan_unroll: with compilation, rollouts of the loss without a selected backend run their whole loop
            inside the compiled step (``None`` leaves them; default 8).
        warmup_steps: forward/backward calls of :meth:`warmup` (positive, default 5).
        mixed_precision: bfloat16 autocast on CUDA (default ``False``).

    Examples:
        >>> stepper = DreamerV3OptimizationStepper(None, None)  # the device decides the defaults
        >>> stepper.resolve(torch.device("cpu")), stepper.resolve(torch.device("cuda"))
        ((False, False), (True, True))

    ``tests/trainers/algorithms/test_dreamer_v3.py`` runs it on a full learner.
    """

    def __init__(
        self,
        loss_module: DreamerV3Loss,
        optimizer: torch.optim.Optimizer,
        target_updater: TargetNetUpdater | None = None,
        *,
        compile_train_step: bool | None = None,
        compile_mode: Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"] = "default",
        cudagraph: bool | None = None,
        rssm_scan_unroll: int | None = 8,
        warmup_steps: int = 5,
        mixed_precision: bool = False,
    ) -> None:
        if warmup_steps < 1:
            raise ValueError(f"warmup_steps must be positive, got {warmup_steps}")
        if rssm_scan_unroll is not None and (not isinstance(rssm_scan_unroll, int) or isinstance(rssm_scan_unroll, bool)
                                             or rssm_scan_unroll < 1):
            raise ValueError(f"rssm_scan_unroll must be a positive integer or None, got {rssm_scan_unroll!r}")
        self.loss_module, self.optimizer, self.target_updater = loss_module, optimizer, target_updater
        self.compile_train_step, self.compile_mode, self.cudagraph = compile_train_step, compile_mode, cudagraph
        self.rssm_scan_unroll, self.warmup_steps, self.mixed_precision = rssm_scan_unroll, warmup_steps, mixed_precision
        self._ready = compile_train_step is False and cudagraph is False
        self._train_step: Callable[[TensorDictBase], TensorDictBase] = self._forward_backward

    def resolve(self, device: torch.device) -> tuple[bool, bool]:
        """The ``(compile_train_step, cudagraph)`` pair used on ``device`` (``None`` means: on CUDA)."""
        cuda = device.type == "cuda"
        return (cuda if self.compile_train_step is None else self.compile_train_step,
                cuda if self.cudagraph is None else self.cudagraph)

    def _select_loop_backends(self) -> list[RSSMRolloutV3]:
        if self.rssm_scan_unroll is None:
            return []
        chosen = []
        for module in self.loss_module.modules():
            if isinstance(module, RSSMRolloutV3) and module.uses_tensor_path and not module.has_backend:
                module.compile_rollout("scan", unroll=self.rssm_scan_unroll, compile=False)
                chosen.append(module)
        return chosen

    def _prepare_sample(self, sample: TensorDictBase) -> TensorDictBase:
        sample = sample.select(*self.loss_module.in_keys, strict=False)
        value_keys = self.loss_module.value_loss.tensor_keys
        for key in (self.loss_module.tensor_keys.is_init, ("next", value_keys.done), ("next", value_keys.terminated)):
            value = sample.get(key, None)
            if value is not None:
                sample.set(key, value.reshape(*sample.batch_size, 1))
        return sample

    def _forward_backward(self, sample: TensorDictBase) -> TensorDictBase:
        device = sample.get(self.loss_module.in_keys[0]).device
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                            enabled=self.mixed_precision and device.type == "cuda"):
            losses = self.loss_module(sample)
            total = sum(v for k, v in losses.items() if isinstance(k, str) and k.startswith("loss_"))
        self.optimizer.zero_grad(set_to_none=False)
        total.backward()
        return losses.detach()

    def warmup(self, sample: TensorDictBase) -> None:
        """Compiles / captures the step on ``sample`` (its keys, shapes, dtypes and device) without training."""
        sample = self._prepare_sample(sample)
        device = sample.get(self.loss_module.in_keys[0]).device
        compile_step, cudagraph = self.resolve(device)
        if cudagraph and device.type != "cuda":
            raise RuntimeError(f"cudagraph=True needs CUDA inputs, got a sample on {device}")
        self._ready = False
        step: Callable[[TensorDictBase], TensorDictBase] = self._forward_backward
        if compile_step:
            self._select_loop_backends()
            step = torch.compile(step, mode=self.compile_mode)
        if cudagraph:
            step = CudaGraphModule(step, warmup=self.warmup_steps, device=device)
        rng = GlobalRNGState()
        rng_state = rng.state_dict()
        buffers = [(b, b.detach().clone()) for b in self.loss_module.buffers()]
        try:
            for _ in range(self.warmup_steps):
                step(sample)
            self.optimizer.zero_grad(set_to_none=False)
        finally:
            with torch.no_grad():
                for buffer, saved in buffers:
                    buffer.copy_(saved)
            rng.load_state_dict(rng_state)
        self._train_step, self._ready = step, True

    def step(self, trainer: Trainer | None, sub_batch: TensorDictBase) -> TensorDictBase:  # type: ignore[override]
        """Updates the learner and its targets on ``sub_batch``; returns the detached scalar metrics."""
        if trainer is not None:
            if trainer.loss_module is not self.loss_module:
                raise ValueError("DreamerV3OptimizationStepper: the trainer and the stepper must share one loss module")
            if getattr(trainer, "process_group", None) is not None:
                raise ValueError("DreamerV3OptimizationStepper runs in one process; distributed updates are not "
                                 "supported (as in TorchRL 0.14.1)")
        if not self._ready:
            device = self._prepare_sample(sub_batch).get(self.loss_module.in_keys[0]).device
            if any(self.resolve(device)):
                raise RuntimeError("call warmup(sample) before compiled or captured updates (the defaults compile "
                                   "and capture on CUDA); pass compile_train_step=False, cudagraph=False to run "
                                   "eagerly without it")
            self._train_step, self._ready = self._forward_backward, True
        result = self._train_step(self._prepare_sample(sub_batch))
        if not any(p.grad is not None for group in self.optimizer.param_groups for p in group["params"]):
            raise RuntimeError("the learner update produced no parameter gradients")
        self.optimizer.step()
        if self.target_updater is not None:
            self.target_updater.step()
        key = self.loss_module.tensor_keys.replay_context
        sub_batch.set(key, result.get(key))
        return result.select(*(k for k, v in result.items() if isinstance(v, torch.Tensor)))

    def state_dict(self) -> dict[str, Any]:
        """Optimizer (and target-updater) progress; the loss is checkpointed on its own."""
        state: dict[str, Any] = {"optimizer": self.optimizer.state_dict()}
        if self.target_updater is not None and hasattr(self.target_updater, "state_dict"):
            state["target_updater"] = self.target_updater.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`."""
        self.optimizer.load_state_dict(state_dict["optimizer"])
        if self.target_updater is not None and "target_updater" in state_dict:
            self.target_updater.load_state_dict(state_dict["target_updater"])


class DreamerV3UpdateRatio:
    """Learner updates owed for a number of collected records, at ``ratio`` updates per record.

    The first call returns 1; later calls return the whole updates owed since, carrying the fraction over.
    A non-positive ratio disables updates.

    Args:
        ratio: updates per driver record.

    Examples:
        >>> schedule = DreamerV3UpdateRatio(0.25)
        >>> [schedule(n) for n in (0, 3, 4, 10)]
        [1, 0, 1, 1]
    """

    def __init__(self, ratio: float) -> None:
        self.ratio = ratio
        self._previous: float | None = None

    def __call__(self, record_count: int) -> int:
        if self.ratio <= 0:
            return 0
        if self._previous is None:
            self._previous = float(record_count)
            return 1
        repeats = int((record_count - self._previous) * self.ratio)
        self._previous += repeats / self.ratio
        return repeats

    def reset(self, record_count: int) -> None:
        """Forgets owed updates and counts from ``record_count`` (e.g. after rebuilding replay on resume)."""
        self._previous = float(record_count)

    def state_dict(self) -> dict[str, float | None]:
        """The ratio and the progress (fractional updates included)."""
        return {"ratio": self.ratio, "previous": self._previous}

    def load_state_dict(self, state_dict: Mapping[str, float | None]) -> None:
        """Restores :meth:`state_dict`."""
        ratio = state_dict["ratio"]
        if ratio is None:
            raise ValueError("DreamerV3UpdateRatio.load_state_dict: 'ratio' is None")
        self.ratio, self._previous = float(ratio), state_dict["previous"]
