"""TorchRL's ``trainers.helpers.losses``: a DQN loss and its target updater from a flat config."""

from __future__ import annotations

from typing import Any

from torch import nn

from tdrl.objectives import (
    DistributionalDQNLoss,
    DQNLoss,
    HardUpdate,
    LossModule,
    SoftUpdate,
    TargetNetUpdater,
)

__all__ = ["make_dqn_loss", "make_target_updater"]


def make_target_updater(cfg: Any, loss_module: LossModule) -> TargetNetUpdater | None:
    """The target-network updater of ``cfg`` for ``loss_module``; ``None`` unless ``cfg.loss == "double"``.

    ``hard_update: true`` copies the weights every ``value_network_update_interval`` updates; otherwise a soft
    update with ``eps = 1 - 1 / value_network_update_interval``.

    Raises:
        ValueError: ``hard_update`` is set with a ``single`` loss (there is no target network to update).

    Examples:
        >>> import torch
        >>> from omegaconf import OmegaConf
        >>> from tdrl.modules import QValueActor
        >>> actor = QValueActor(torch.nn.Linear(3, 2), in_keys=["observation"], action_space="one_hot")
        >>> cfg = OmegaConf.create({"loss": "double", "hard_update": False, "value_network_update_interval": 10,
        ...                         "distributional": False, "loss_function": "l2", "gamma": 0.9})
        >>> loss, updater = make_dqn_loss(actor, cfg)
        >>> type(updater).__name__
        'SoftUpdate'
    """
    if cfg.loss == "double":
        if cfg.hard_update:
            return HardUpdate(loss_module, value_network_update_interval=cfg.value_network_update_interval)
        return SoftUpdate(loss_module, eps=1 - 1 / cfg.value_network_update_interval)
    if cfg.hard_update:
        raise ValueError(
            f"hard_update=True needs loss='double' (a target network); got loss={cfg.loss!r}. "
            "Set loss: double or hard_update: false."
        )
    return None


def make_dqn_loss(model: nn.Module, cfg: Any) -> tuple[LossModule, TargetNetUpdater | None]:
    """A DQN loss (distributional with ``cfg.distributional``) on ``model`` and its target updater.

    Reads ``distributional``, ``loss_function`` (non-distributional only), ``loss`` (``"single"`` or
    ``"double"``: a delayed target network), ``gamma`` and the fields of :func:`make_target_updater`.

    Raises:
        ValueError: ``cfg.loss`` is neither ``"single"`` nor ``"double"``.

    Examples:
        >>> import torch
        >>> from omegaconf import OmegaConf
        >>> from tdrl.modules import QValueActor
        >>> actor = QValueActor(torch.nn.Linear(3, 2), in_keys=["observation"], action_space="one_hot")
        >>> cfg = OmegaConf.create({"loss": "single", "hard_update": False, "value_network_update_interval": 10,
        ...                         "distributional": False, "loss_function": "smooth_l1", "gamma": 0.9})
        >>> loss, updater = make_dqn_loss(actor, cfg)
        >>> type(loss).__name__, loss.loss_function, updater
        ('DQNLoss', 'smooth_l1', None)
    """
    if cfg.loss not in ("single", "double"):
        raise ValueError(f"cfg.loss must be 'single' or 'double', got {cfg.loss!r}")
    delay = cfg.loss == "double"
    if cfg.distributional:
        loss: LossModule = DistributionalDQNLoss(model, delay_value=delay)
    else:
        loss = DQNLoss(model, loss_function=cfg.loss_function, delay_value=delay)
    loss.make_value_estimator(gamma=cfg.gamma)
    return loss, make_target_updater(cfg, loss)
