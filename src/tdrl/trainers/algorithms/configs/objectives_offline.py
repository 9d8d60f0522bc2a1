"""Configs for the offline-RL losses (group ``loss``: ``cql``, ``iql``), with TorchRL's field names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tdrl.objectives import CQLLoss, DiscreteIQLLoss, IQLLoss, LossModule
from tdrl.trainers.algorithms.configs.common import build
from tdrl.trainers.algorithms.configs.objectives import LossConfig, _gamma_factory

__all__ = ["CQLLossConfig", "IQLLossConfig", "make_cql_loss", "make_iql_loss"]


# CQLLoss's own signature (gamma goes to its value estimator): the config below must match it
make_cql_loss = _gamma_factory(CQLLoss)


def make_iql_loss(
    actor_network: Any = None,
    qvalue_network: Any = None,
    value_network: Any = None,
    discrete: bool = False,
    action_space: Any = None,
    num_qvalue_nets: int = 2,
    loss_function: str = "smooth_l1",
    temperature: float = 1.0,
    expectile: float = 0.5,
    gamma: float | None = None,
    priority_key: str | None = None,
    separate_losses: bool = False,
    reduction: str | None = None,
    deactivate_vmap: bool = False,
    scalar_output_mode: Any = None,
) -> LossModule:
    """Builds an :class:`~tdrl.objectives.IQLLoss`, or a ``DiscreteIQLLoss`` with ``discrete: true``.

    Examples:
        >>> import torch
        >>> from tdrl.trainers.algorithms.configs.modules import make_tanh_normal_model, make_value_model
        >>> loss = make_iql_loss(make_tanh_normal_model(torch.nn.Linear(3, 2)),
        ...     make_value_model(torch.nn.Linear(4, 1), in_keys=["observation", "action"],
        ...                      out_keys=["state_action_value"]),
        ...     make_value_model(torch.nn.Linear(3, 1)), expectile=0.7)
        >>> type(loss).__name__, float(loss.expectile)
        ('IQLLoss', 0.7)
    """
    actor, qvalue, value = build(actor_network), build(qvalue_network), build(value_network)
    shared = dict(num_qvalue_nets=num_qvalue_nets, loss_function=loss_function, temperature=temperature,
                  expectile=expectile, priority_key=priority_key, separate_losses=separate_losses,
                  reduction=reduction, scalar_output_mode=scalar_output_mode)
    if discrete:
        if deactivate_vmap:
            raise ValueError("loss.deactivate_vmap applies to the continuous IQL loss only (discrete: false)")
        loss: LossModule = DiscreteIQLLoss(actor, qvalue, value, action_space=action_space, **shared)
    else:
        if action_space is not None:
            raise ValueError("loss.action_space applies to the discrete IQL loss only (set discrete: true)")
        loss = IQLLoss(actor, qvalue, value, deactivate_vmap=deactivate_vmap, **shared)
    if gamma is not None:
        loss.make_value_estimator(gamma=gamma)
    return loss


@dataclass
class CQLLossConfig(LossConfig):
    """:class:`~tdrl.objectives.CQLLoss` (conservative Q-learning, https://arxiv.org/abs/2006.04779)."""

    actor_network: Any = None
    qvalue_network: Any = None
    loss_function: str = "smooth_l1"
    alpha_init: float = 1.0
    min_alpha: float | None = None
    max_alpha: float | None = None
    action_spec: Any = None
    fixed_alpha: bool = False
    target_entropy: Any = "auto"
    delay_actor: bool = False
    delay_qvalue: bool = True
    gamma: float | None = None
    temperature: float = 1.0
    min_q_weight: float = 1.0
    max_q_backup: bool = False
    deterministic_backup: bool = True
    num_random: int = 10
    with_lagrange: bool = False
    lagrange_thresh: float = 0.0
    reduction: str | None = None
    deactivate_vmap: bool = False
    scalar_output_mode: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.objectives_offline.make_cql_loss"


@dataclass
class IQLLossConfig(LossConfig):
    """:class:`~tdrl.objectives.IQLLoss` (implicit Q-learning, https://arxiv.org/abs/2110.06169)."""

    actor_network: Any = None
    qvalue_network: Any = None
    value_network: Any = None
    discrete: bool = False
    action_space: Any = None
    num_qvalue_nets: int = 2
    loss_function: str = "smooth_l1"
    temperature: float = 1.0
    expectile: float = 0.5
    gamma: float | None = None
    priority_key: str | None = None
    separate_losses: bool = False
    reduction: str | None = None
    deactivate_vmap: bool = False
    scalar_output_mode: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.objectives_offline.make_iql_loss"
