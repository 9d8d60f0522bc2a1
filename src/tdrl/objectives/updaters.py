"""Target-network updaters: :class:`SoftUpdate` (Polyak averaging) and :class:`HardUpdate` (periodic copy).

A loss built with ``delay_*=True`` holds ``target_<net>_params`` buffers next to ``<net>_params``; these
classes are the only thing that moves them. Updates run as one fused ``torch._foreach_*`` call over all
target tensors.
"""

from __future__ import annotations

import abc
from typing import Any

import torch
from torch import Tensor

from tdrl.objectives.common import LossModule

__all__ = ["HardUpdate", "SoftUpdate", "TargetNetUpdater"]


class TargetNetUpdater(abc.ABC):
    """Base class of the target-network updaters.

    Pairs every ``target_<net>_params`` buffer of ``loss_module`` with its ``<net>_params`` source and
    keeps the pairs whose source is trainable and distinct from the target (parameters shared with
    another network through ``compare_against`` are not updated, as in TorchRL).

    Args:
        loss_module: a loss with target parameters.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.objectives import DQNLoss, SoftUpdate
        >>> net = TensorDictModule(torch.nn.Linear(3, 2), ["observation"], ["action_value"])
        >>> loss = DQNLoss(net, action_space="one-hot")
        >>> updater = SoftUpdate(loss, tau=0.01)
        >>> updater.step()
    """

    def __init__(self, loss_module: LossModule) -> None:
        if not isinstance(loss_module, LossModule):
            raise TypeError(f"loss_module must be a LossModule, got {type(loss_module).__name__}")
        names = [n for n, _ in loss_module.named_children() if n.startswith("target_") and n.endswith("_params")]
        if not names:
            raise RuntimeError(
                f"{type(loss_module).__name__} has no target parameters; build it with delay_*=True "
                "(e.g. delay_value=True) to use a target-network updater"
            )
        self.loss_module = loss_module
        self._target_names = names
        self._source_names = [n[len("target_") :] for n in names]
        self.initialized = False
        for name in self._source_names:
            loss_module._has_update_associated[name[: -len("_params")]] = True
        self.init_()

    def _pairs(self) -> tuple[list[Tensor], list[Tensor]]:
        sources: list[Tensor] = []
        targets: list[Tensor] = []
        for s_name, t_name in zip(self._source_names, self._target_names):
            src_td = getattr(self.loss_module, s_name)
            tgt_td = self.loss_module._modules[t_name]
            for key in src_td.keys(True, True):
                src = src_td.get(key)
                tgt = tgt_td.get(key)
                if tgt.requires_grad:
                    raise RuntimeError(f"target parameter {t_name}.{key} is part of a graph (requires_grad=True)")
                if src.requires_grad and tgt.data_ptr() != src.data_ptr():
                    sources.append(src.data)
                    targets.append(tgt.data)
        return sources, targets

    def init_(self) -> None:
        """Copies the current parameters into the targets (called by the constructor)."""
        sources, targets = self._pairs()
        if not sources:
            raise RuntimeError(
                "Target and source parameters are identical for every entry: the loss has no distinct target "
                "network (did you set delay_value / delay_qvalue / delay_actor to True?)"
            )
        torch._foreach_copy_(targets, sources)
        self._sources, self._targets = sources, targets
        self.initialized = True

    def step(self) -> None:
        """Moves the targets (call once per optimizer step)."""
        if not self.initialized:
            raise RuntimeError(f"{type(self).__name__} must be initialized with init_() before step()")
        self._step(self._sources, self._targets)

    @abc.abstractmethod
    def _step(self, sources: list[Tensor], targets: list[Tensor]) -> None:
        """Moves ``targets`` towards ``sources`` in place."""

    def state_dict(self) -> dict[str, Any]:
        """Update progress (the target values themselves live in the loss module's state_dict)."""
        state: dict[str, Any] = {"initialized": self.initialized}
        if hasattr(self, "counter"):
            state["counter"] = self.counter
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the progress saved by :meth:`state_dict`."""
        self.initialized = state_dict.get("initialized", self.initialized)
        if "counter" in state_dict and hasattr(self, "counter"):
            self.counter = int(state_dict["counter"])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(targets={self._target_names})"


class SoftUpdate(TargetNetUpdater):
    r"""Polyak averaging: ``target = eps * target + (1 - eps) * param`` at every :meth:`step`.

    Lillicrap et al., "Continuous control with deep reinforcement learning", https://arxiv.org/abs/1509.02971.

    Args:
        loss_module: a loss with target parameters.
        eps: decay of the target (exclusive with ``tau``).
        tau: Polyak coefficient, ``1 - eps`` (exclusive with ``eps``).

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.objectives import DQNLoss
        >>> loss = DQNLoss(TensorDictModule(torch.nn.Linear(3, 2), ["observation"], ["action_value"]),
        ...                action_space="one-hot")
        >>> SoftUpdate(loss, eps=0.99).eps
        0.99
    """

    def __init__(self, loss_module: LossModule, *, eps: float | None = None, tau: float | None = None) -> None:
        if (eps is None) == (tau is None):
            raise ValueError("SoftUpdate: pass exactly one of eps or tau")
        if eps is None:
            eps = 1.0 - tau
        if not 0.0 <= eps <= 1.0:
            raise ValueError(f"SoftUpdate: eps must be in [0, 1], got {eps}")
        self.eps = eps
        super().__init__(loss_module)

    def _step(self, sources: list[Tensor], targets: list[Tensor]) -> None:
        torch._foreach_lerp_(targets, sources, 1.0 - self.eps)


class HardUpdate(TargetNetUpdater):
    """Copies the parameters into the targets every ``value_network_update_interval + 1`` steps (TorchRL's timing).

    van Hasselt et al., "Deep Reinforcement Learning with Double Q-learning", https://arxiv.org/abs/1509.06461.

    Args:
        loss_module: a loss with target parameters.
        value_network_update_interval: number of :meth:`step` calls between copies; the counter counts
            0..interval and copies when it reaches ``interval``.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.objectives import DQNLoss
        >>> loss = DQNLoss(TensorDictModule(torch.nn.Linear(3, 2), ["observation"], ["action_value"]),
        ...                action_space="one-hot")
        >>> HardUpdate(loss, value_network_update_interval=10).counter
        0
    """

    def __init__(self, loss_module: LossModule, *, value_network_update_interval: float = 1000) -> None:
        self.value_network_update_interval = value_network_update_interval
        self.counter = 0
        super().__init__(loss_module)

    def _step(self, sources: list[Tensor], targets: list[Tensor]) -> None:
        if self.counter == self.value_network_update_interval:
            torch._foreach_copy_(targets, sources)
            self.counter = 0
        else:
            self.counter += 1
