"""Structured configs of the DreamerV3 networks, loss, optimizer, learner step and update ratio (TorchRL 0.14.1's
names, fields and defaults; registered as ``network/dreamer_v3_*``, ``network/rssm_state_estimator_v3``,
``loss/dreamer_v3``, ``optimizer/dreamer_v3`` and ``hook/dreamer_v3_optimization``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from tdrl.trainers.algorithms.configs.common import ConfigBase
from tdrl.trainers.algorithms.configs.hooks import HookConfig
from tdrl.trainers.algorithms.configs.modules import NetworkConfig
from tdrl.trainers.algorithms.configs.objectives import LossConfig

__all__ = [
    "DreamerV3DiscreteActorConfig",
    "DreamerV3ImageDecoderConfig",
    "DreamerV3ImageEncoderConfig",
    "DreamerV3LossConfig",
    "DreamerV3MLPConfig",
    "DreamerV3OptimizationStepperConfig",
    "DreamerV3OptimizerConfig",
    "DreamerV3SeededPolicyConfig",
    "DreamerV3UpdateRatioConfig",
    "RSSMStateEstimatorV3Config",
]

# The two key-normalising factories live with the other network factories (TorchRL's configs.modules path).
_FACTORIES = "tdrl.trainers.algorithms.configs.modules"


@dataclass
class DreamerV3MLPConfig(NetworkConfig):
    """:class:`~tdrl.modules.DreamerV3MLP`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(DreamerV3MLPConfig(in_features=4, out_features=2, depth=1, num_cells=8)).model[-1].out_features
        2
    """

    in_features: int = MISSING
    out_features: int | None = MISSING
    depth: int = 3
    num_cells: int = 1024
    outscale: float = 1.0
    norm_eps: float = 1e-4
    device: Any = None
    _target_: str = "tdrl.modules.DreamerV3MLP"


@dataclass
class DreamerV3ImageEncoderConfig(NetworkConfig):
    """:class:`~tdrl.modules.DreamerV3ImageEncoder`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(DreamerV3ImageEncoderConfig(depth=2, mults=[1, 2])).output_features((3, 16, 16))
        64
    """

    in_channels: int = 3
    depth: int = 64
    mults: list[int] = field(default_factory=lambda: [2, 3, 4, 4])
    kernel_size: int = 5
    norm_eps: float = 1e-4
    device: Any = None
    _target_: str = "tdrl.modules.DreamerV3ImageEncoder"


@dataclass
class DreamerV3ImageDecoderConfig(NetworkConfig):
    """:class:`~tdrl.modules.DreamerV3ImageDecoder`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> cfg = DreamerV3ImageDecoderConfig(in_features=8, image_shape=[3, 16, 16], depth=2, mults=[1, 2],
        ...                                   num_blocks=2)
        >>> instantiate(cfg).initial_shape
        (4, 4, 4)
    """

    in_features: int = MISSING
    image_shape: list[int] = field(default_factory=lambda: [3, 64, 64])
    depth: int = 64
    mults: list[int] = field(default_factory=lambda: [2, 3, 4, 4])
    kernel_size: int = 5
    num_blocks: int = 8
    norm_eps: float = 1e-4
    device: Any = None
    _target_: str = "tdrl.modules.DreamerV3ImageDecoder"


@dataclass
class DreamerV3DiscreteActorConfig(NetworkConfig):
    """:class:`~tdrl.modules.DreamerV3DiscreteActor`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> actor = instantiate(DreamerV3DiscreteActorConfig(in_features=6, out_features=3, depth=1, num_cells=8,
        ...                                                  action_key=["agent", "action"]))
        >>> actor.out_keys[-2:]
        [('agent', 'action'), 'action_log_prob']
    """

    in_features: int = MISSING
    out_features: int = MISSING
    depth: int = 3
    num_cells: int = 1024
    norm_eps: float = 1e-4
    unimix: float = 0.01
    in_keys: Any = None
    action_key: Any = "action"
    logits_key: Any = "logits"
    log_prob_key: Any = "action_log_prob"
    device: Any = None
    _target_: str = f"{_FACTORIES}.make_dreamer_v3_discrete_actor"


@dataclass
class DreamerV3SeededPolicyConfig(NetworkConfig):
    """:class:`~tdrl.modules.DreamerV3SeededPolicy` around a configured ``module``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> policy = instantiate(DreamerV3SeededPolicyConfig(
        ...     module=DreamerV3DiscreteActorConfig(in_features=6, out_features=3, depth=1, num_cells=8), seed=3))
        >>> policy.seed, policy.counter
        (3, 0)
    """

    module: Any = MISSING
    seed: int = MISSING
    _target_: str = "tdrl.modules.DreamerV3SeededPolicy"


@dataclass
class RSSMStateEstimatorV3Config(NetworkConfig):
    """:class:`~tdrl.modules.RSSMStateEstimatorV3` of a configured prior and posterior.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.modules import RSSMPosteriorV3, RSSMPriorV3
        >>> prior = RSSMPriorV3(action_dim=2, hidden_dim=8, rnn_hidden_dim=8, num_categoricals=2, num_classes=2)
        >>> post = RSSMPosteriorV3(hidden_dim=8, rnn_hidden_dim=8, obs_embed_dim=4, num_categoricals=2, num_classes=2)
        >>> instantiate(RSSMStateEstimatorV3Config(prior=prior, posterior=post, out_keys=[["next", "state"], "b"]),
        ...             _convert_="none").out_keys
        [('next', 'state'), 'b']
    """

    prior: Any = MISSING
    posterior: Any = MISSING
    in_keys: Any = None
    out_keys: Any = None
    _target_: str = f"{_FACTORIES}.make_rssm_state_estimator_v3"


@dataclass
class DreamerV3LossConfig(LossConfig):
    """:class:`~tdrl.objectives.DreamerV3Loss` of configured model, actor and value losses.

    Examples:
        >>> DreamerV3LossConfig().replay_value_loss_weight
        0.3
    """

    model_loss: Any = None
    actor_loss: Any = None
    value_loss: Any = None
    replay_value_loss_weight: float = 0.3
    continuation_horizon: float = 333.0
    lmbda: float = 0.95
    _target_: str = "tdrl.objectives.DreamerV3Loss"


@dataclass
class DreamerV3OptimizerConfig(ConfigBase):
    """:class:`~tdrl.trainers.algorithms.DreamerV3Optimizer`, instantiated as a constructor awaiting parameters.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(DreamerV3OptimizerConfig(lr=1e-3))([torch.nn.Parameter(torch.ones(2))])
        >>> opt.defaults["lr"], opt.defaults["warmup_steps"]
        (0.001, 1000)
    """

    lr: float = 4e-5
    agc: float = 0.3
    parameter_norm_min: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-20
    warmup_steps: int = 1000
    _target_: str = "tdrl.trainers.algorithms.DreamerV3Optimizer"
    _partial_: bool = True


@dataclass
class DreamerV3OptimizationStepperConfig(HookConfig):
    """:class:`~tdrl.trainers.algorithms.DreamerV3OptimizationStepper`.

    Examples:
        >>> DreamerV3OptimizationStepperConfig().rssm_scan_unroll
        8
    """

    loss_module: Any = None
    optimizer: Any = None
    target_updater: Any = None
    compile_train_step: bool | None = None
    compile_mode: str = "default"
    cudagraph: bool | None = None
    rssm_scan_unroll: int | None = 8
    warmup_steps: int = 5
    mixed_precision: bool = False
    _target_: str = "tdrl.trainers.algorithms.DreamerV3OptimizationStepper"


@dataclass
class DreamerV3UpdateRatioConfig(ConfigBase):
    """:class:`~tdrl.trainers.algorithms.DreamerV3UpdateRatio`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(DreamerV3UpdateRatioConfig(ratio=0.5))(0)
        1
    """

    ratio: float = MISSING
    _target_: str = "tdrl.trainers.algorithms.DreamerV3UpdateRatio"
