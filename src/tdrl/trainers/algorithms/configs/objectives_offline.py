"""Configs for the offline-RL losses (group ``loss``: ``cql``, ``iql``), with TorchRL's field names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tdrl.trainers.algorithms.configs.objectives import LossConfig, make_cql_loss, make_iql_loss

__all__ = ["CQLLossConfig", "IQLLossConfig", "make_cql_loss", "make_iql_loss"]


@dataclass
class CQLLossConfig(LossConfig):
    """:class:`~tdrl.objectives.CQLLoss` (conservative Q-learning, https://arxiv.org/abs/2006.04779).

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.data import Bounded
        >>> from tdrl.trainers.algorithms.configs.modules import MLPConfig, TanhNormalModelConfig, ValueModelConfig
        >>> cfg = CQLLossConfig(
        ...     actor_network=TanhNormalModelConfig(network=MLPConfig(in_features=3, out_features=2)),
        ...     qvalue_network=ValueModelConfig(network=MLPConfig(in_features=4, out_features=1),
        ...                                     in_keys=["observation", "action"], out_keys=["state_action_value"]),
        ...     action_spec=Bounded(-1.0, 1.0, shape=(1,)), min_q_weight=5.0)
        >>> loss = instantiate(cfg)
        >>> type(loss).__name__, loss.min_q_weight
        ('CQLLoss', 5.0)
    """

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
    """:class:`~tdrl.objectives.IQLLoss` (implicit Q-learning, https://arxiv.org/abs/2110.06169).

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.modules import MLPConfig, TanhNormalModelConfig, ValueModelConfig
        >>> cfg = IQLLossConfig(
        ...     actor_network=TanhNormalModelConfig(network=MLPConfig(in_features=3, out_features=2)),
        ...     qvalue_network=ValueModelConfig(network=MLPConfig(in_features=4, out_features=1),
        ...                                     in_keys=["observation", "action"], out_keys=["state_action_value"]),
        ...     value_network=ValueModelConfig(network=MLPConfig(in_features=3, out_features=1)), expectile=0.7)
        >>> loss = instantiate(cfg)
        >>> type(loss).__name__, float(loss.expectile)
        ('IQLLoss', 0.7)
    """

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
