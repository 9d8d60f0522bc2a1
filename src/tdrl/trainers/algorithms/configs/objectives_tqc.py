"""Config for the TQC loss (group ``loss``, name ``tqc``), with TorchRL's fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tdrl.trainers.algorithms.configs.objectives import LossConfig

__all__ = ["TQCLossConfig"]


@dataclass
class TQCLossConfig(LossConfig):
    """:class:`~tdrl.objectives.TQCLoss` (truncated quantile critics, https://arxiv.org/abs/2005.04269).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tdrl.data import Bounded
        >>> from tdrl.trainers.algorithms.configs.modules import make_tanh_normal_model, make_value_model
        >>> actor = make_tanh_normal_model(torch.nn.Linear(3, 2))
        >>> critic = make_value_model(torch.nn.Linear(4, 5), in_keys=["observation", "action"],
        ...                           out_keys=["state_action_value"])
        >>> loss = instantiate(TQCLossConfig(num_qvalue_nets=2, top_quantiles_to_drop_per_net=1),
        ...                    actor_network=actor, qvalue_network=critic, action_spec=Bounded(-1, 1, (2,)))
        >>> type(loss).__name__
        'TQCLoss'
    """

    actor_network: Any = None
    qvalue_network: Any = None
    num_qvalue_nets: int = 5
    top_quantiles_to_drop_per_net: int = 2
    alpha_init: float = 1.0
    min_alpha: float | None = None
    max_alpha: float | None = None
    action_spec: Any = None
    fixed_alpha: bool = False
    target_entropy: Any = "auto"
    delay_qvalue: bool = True
    separate_losses: bool = False
    reduction: str | None = None
    deactivate_vmap: bool = False
    skip_done_states: bool = False
    use_prioritized_weights: Any = "auto"
    scalar_output_mode: str | None = None
    _target_: str = "tdrl.objectives.TQCLoss"
