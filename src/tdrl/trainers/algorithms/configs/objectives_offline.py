"""Configs for the offline-RL losses (group ``loss``: ``cql``, ``iql``), with TorchRL's field names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tdrl.trainers.algorithms.configs.objectives import LossConfig, make_cql_loss, make_iql_loss

__all__ = ["CQLLossConfig", "IQLLossConfig", "make_cql_loss", "make_iql_loss"]


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
    _target_: str = "tdrl.trainers.algorithms.configs.objectives.make_cql_loss"


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
    _target_: str = "tdrl.trainers.algorithms.configs.objectives.make_iql_loss"
