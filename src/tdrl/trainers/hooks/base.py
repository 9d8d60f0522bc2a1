"""The hook protocol and the optimisation steppers."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase
from torch import nn, optim

if TYPE_CHECKING:
    from tdrl.trainers.trainer import Trainer

__all__ = ["DefaultOptimizationStepper", "OptimizationStepper", "TrainerHookBase", "grad_norm_and_clip"]


class TrainerHookBase(abc.ABC):
    """A trainer hook: state for checkpoints, and a default place in the loop (:meth:`register`).

    Examples:
        >>> class CountBatches(TrainerHookBase):
        ...     def __init__(self):
        ...         self.count = 0
        ...     def __call__(self, batch):
        ...         self.count += 1
        ...     def state_dict(self):
        ...         return {"count": self.count}
        ...     def load_state_dict(self, state_dict):
        ...         self.count = state_dict["count"]
        ...     def register(self, trainer, name="count_batches"):
        ...         trainer.register_op("batch_process", self)
        ...         trainer.register_module(name, self)
        >>> hook = CountBatches()
        >>> hook(None)
        >>> restored = CountBatches()
        >>> restored.load_state_dict(hook.state_dict())
        >>> restored.count
        1
    """

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Plain data saved in the trainer's checkpoint."""

    @abc.abstractmethod
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`."""

    @abc.abstractmethod
    def register(self, trainer: Trainer, name: str) -> None:
        """Registers the hook at its default destination (``trainer.register_op``) and as a module."""


def grad_norm_and_clip(optimizer: optim.Optimizer, clip_grad_norm: bool, clip_norm: float | None) -> float:
    """Returns the total gradient norm of ``optimizer``'s parameters, clipping it (or each value) if asked.

    Examples:
        >>> w = torch.nn.Parameter(torch.ones(2))
        >>> (w * 3).sum().backward()
        >>> round(grad_norm_and_clip(torch.optim.SGD([w], lr=1.0), True, 1.0), 3)
        4.243
        >>> round(float(w.grad.norm()), 3)
        1.0
    """
    params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    if not params:
        return 0.0
    if clip_grad_norm and clip_norm is not None:
        return float(nn.utils.clip_grad_norm_(params, clip_norm))
    norm = float(torch.linalg.vector_norm(torch.stack([p.grad.detach().norm() for p in params])))
    if clip_norm is not None:
        nn.utils.clip_grad_value_(params, clip_norm)
    return norm


class OptimizationStepper(TrainerHookBase):
    """One optimisation step per sub-batch, replacing the ``post_loss``/``optimizer`` hook chain.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> class HalfStep(OptimizationStepper):  # plain SGD at half the optimiser's rate, written by hand
        ...     def step(self, trainer, sub_batch):
        ...         losses = trainer.compute_loss(sub_batch)
        ...         losses["loss"].backward()
        ...         with torch.no_grad():
        ...             for group in trainer.optimizer.param_groups:
        ...                 for p in group["params"]:
        ...                     p -= 0.5 * group["lr"] * p.grad
        ...                     p.grad = None
        ...         return losses.detach()
        >>> from types import SimpleNamespace
        >>> w = torch.nn.Parameter(torch.zeros(1))
        >>> trainer = SimpleNamespace(optimizer=torch.optim.SGD([w], lr=1.0),
        ...     compute_loss=lambda td: TensorDict({"loss": ((td["x"] - w) ** 2).mean()}, []))
        >>> float(HalfStep().step(trainer, TensorDict({"x": torch.ones(4, 1)}, [4]))["loss"]), round(float(w), 2)
        (1.0, 1.0)
    """

    def step(self, trainer: Trainer, sub_batch: TensorDictBase) -> TensorDictBase:
        """Computes the loss on ``sub_batch``, updates the parameters, returns detached metrics."""
        raise TypeError(f"{type(self).__name__} must define step(trainer, sub_batch)")

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        del state_dict

    def register(self, trainer: Trainer, name: str = "optimization_stepper") -> None:
        trainer.register_module(name, self)


class DefaultOptimizationStepper(OptimizationStepper):
    """Sums the ``loss*`` entries (or ``loss_components``), back-propagates, clips and steps ``trainer.optimizer``.

    Args:
        loss_components: the loss keys to optimise (``None``: every key starting with ``"loss"``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from types import SimpleNamespace
        >>> w = torch.nn.Parameter(torch.zeros(1))
        >>> trainer = SimpleNamespace(optimizer=torch.optim.SGD([w], lr=0.25), clip_grad_norm=True, clip_norm=None,
        ...     compute_loss=lambda td: TensorDict({"loss_a": ((td["x"] - w) ** 2).mean(), "other": w.sum()}, []))
        >>> out = DefaultOptimizationStepper().step(trainer, TensorDict({"x": torch.ones(4, 1)}, [4]))
        >>> round(float(out["grad_norm"]), 2), round(float(w), 2)  # d/dw (1 - w)^2 = -2 at w = 0; only loss_a counts
        (2.0, 0.5)
    """

    def __init__(self, loss_components: Sequence[str] | None = None) -> None:
        if loss_components is not None and not loss_components:
            raise ValueError("loss_components cannot be empty; pass None to optimise every 'loss*' entry")
        self.loss_components = None if loss_components is None else set(loss_components)

    def step(self, trainer: Trainer, sub_batch: TensorDictBase) -> TensorDictBase:
        losses = trainer.compute_loss(sub_batch)
        if trainer.optimizer is None:
            raise RuntimeError("DefaultOptimizationStepper needs Trainer(optimizer=...)")
        keys = [k for k in losses.keys() if (k in self.loss_components if self.loss_components else k.startswith("loss"))]
        sum(losses.get(k) for k in keys).backward()
        norm = grad_norm_and_clip(trainer.optimizer, trainer.clip_grad_norm, trainer.clip_norm)
        trainer.optimizer.step()
        trainer.optimizer.zero_grad()
        losses = losses.detach()
        losses["grad_norm"] = torch.tensor(norm)
        return losses
