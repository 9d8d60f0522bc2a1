"""Configs for optimizers (group ``optimizer``) and LR schedulers (group ``lr_scheduler``).

Both are partial: the trainer factory completes them with the loss parameters (``optimizer(params=...)``)
and the optimizer (``scheduler(optimizer)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from tdrl.trainers.algorithms.configs.common import ConfigBase

__all__ = [
    "ASGDConfig", "AdadeltaConfig", "LBFGSConfig", "RpropConfig", "SparseAdamConfig", "AdagradConfig", "AdamConfig", "AdamWConfig", "AdamaxConfig", "CosineAnnealingLRConfig",
    "ExponentialLRConfig", "LRSchedulerConfig", "LinearLRConfig", "NAdamConfig", "OptimizerConfig",
    "RAdamConfig", "RMSpropConfig", "SGDConfig", "StepLRConfig",
]


@dataclass
class OptimizerConfig(ConfigBase):
    """Parent of optimizer configs: a partial completed with ``params``.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> partial = instantiate(AdamConfig())
        >>> partial.keywords["lr"]
        0.001
        >>> opt = partial(params=torch.nn.Linear(2, 2).parameters())
        >>> isinstance(AdamConfig(), OptimizerConfig), type(opt).__name__
        (True, 'Adam')
    """

    _partial_: bool = True
    # plain lists (betas), so optimizer state dicts stay loadable with weights_only=True
    _convert_: str = "all"


def _betas() -> Any:
    return field(default_factory=lambda: [0.9, 0.999])


@dataclass
class AdamConfig(OptimizerConfig):
    """:class:`torch.optim.Adam`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(AdamConfig(lr=1e-2))(params=torch.nn.Linear(2, 2).parameters())
        >>> opt.defaults["lr"]
        0.01
    """

    lr: float = 1e-3
    betas: Any = _betas()
    eps: float = 1e-8
    weight_decay: float = 0.0
    amsgrad: bool = False
    foreach: bool | None = None
    maximize: bool = False
    capturable: bool = False
    differentiable: bool = False
    fused: bool | None = None
    decoupled_weight_decay: bool = False
    _target_: str = "torch.optim.Adam"


@dataclass
class AdamWConfig(OptimizerConfig):
    """:class:`torch.optim.AdamW`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(AdamWConfig(weight_decay=0.1))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["weight_decay"]
        ('AdamW', 0.1)
    """

    lr: float = 1e-3
    betas: Any = _betas()
    eps: float = 1e-8
    weight_decay: float = 1e-2
    amsgrad: bool = False
    maximize: bool = False
    foreach: bool | None = None
    capturable: bool = False
    differentiable: bool = False
    fused: bool | None = None
    _target_: str = "torch.optim.AdamW"


@dataclass
class AdamaxConfig(OptimizerConfig):
    """:class:`torch.optim.Adamax`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(AdamaxConfig(lr=0.5))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["lr"]
        ('Adamax', 0.5)
    """

    lr: float = 2e-3
    betas: Any = _betas()
    eps: float = 1e-8
    weight_decay: float = 0.0
    foreach: bool | None = None
    maximize: bool = False
    differentiable: bool = False
    capturable: bool = False
    _target_: str = "torch.optim.Adamax"


@dataclass
class SGDConfig(OptimizerConfig):
    """:class:`torch.optim.SGD`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(SGDConfig(lr=0.1, momentum=0.9))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["momentum"]
        ('SGD', 0.9)
    """

    lr: float = 1e-3
    momentum: float = 0.0
    dampening: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False
    maximize: bool = False
    foreach: bool | None = None
    differentiable: bool = False
    fused: bool | None = None
    _target_: str = "torch.optim.SGD"


@dataclass
class RMSpropConfig(OptimizerConfig):
    """:class:`torch.optim.RMSprop`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(RMSpropConfig())(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["alpha"]
        ('RMSprop', 0.99)
    """

    lr: float = 1e-2
    alpha: float = 0.99
    eps: float = 1e-8
    weight_decay: float = 0.0
    momentum: float = 0.0
    centered: bool = False
    capturable: bool = False
    foreach: bool | None = None
    maximize: bool = False
    differentiable: bool = False
    _target_: str = "torch.optim.RMSprop"


@dataclass
class AdadeltaConfig(OptimizerConfig):
    """:class:`torch.optim.Adadelta`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(AdadeltaConfig(rho=0.5))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["rho"]
        ('Adadelta', 0.5)
    """

    lr: float = 1.0
    rho: float = 0.9
    eps: float = 1e-6
    weight_decay: float = 0.0
    foreach: bool | None = None
    capturable: bool = False
    maximize: bool = False
    differentiable: bool = False
    _target_: str = "torch.optim.Adadelta"


@dataclass
class ASGDConfig(OptimizerConfig):
    """:class:`torch.optim.ASGD` (averaged SGD).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(ASGDConfig(lr=0.5))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["lr"]
        ('ASGD', 0.5)
    """

    lr: float = 1e-2
    lambd: float = 1e-4
    alpha: float = 0.75
    t0: float = 1e6
    weight_decay: float = 0.0
    foreach: bool | None = None
    maximize: bool = False
    differentiable: bool = False
    capturable: bool = False
    _target_: str = "torch.optim.ASGD"


@dataclass
class LBFGSConfig(OptimizerConfig):
    """:class:`torch.optim.LBFGS` (its ``step`` needs a closure: for custom training loops).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(LBFGSConfig(history_size=5))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["history_size"]
        ('LBFGS', 5)
    """

    lr: float = 1.0
    max_iter: int = 20
    max_eval: int | None = None
    tolerance_grad: float = 1e-7
    tolerance_change: float = 1e-9
    history_size: int = 100
    line_search_fn: str | None = None
    _target_: str = "torch.optim.LBFGS"


@dataclass
class RpropConfig(OptimizerConfig):
    """:class:`torch.optim.Rprop`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(RpropConfig(lr=0.5))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["etas"]
        ('Rprop', [0.5, 1.2])
    """

    lr: float = 1e-2
    etas: Any = field(default_factory=lambda: [0.5, 1.2])
    step_sizes: Any = field(default_factory=lambda: [1e-6, 50.0])
    capturable: bool = False
    foreach: bool | None = None
    maximize: bool = False
    differentiable: bool = False
    _target_: str = "torch.optim.Rprop"


@dataclass
class SparseAdamConfig(OptimizerConfig):
    """:class:`torch.optim.SparseAdam` (for sparse gradients, e.g. ``nn.Embedding(sparse=True)``).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(SparseAdamConfig(lr=0.5))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["lr"]
        ('SparseAdam', 0.5)
    """

    lr: float = 1e-3
    betas: Any = _betas()
    eps: float = 1e-8
    maximize: bool = False
    _target_: str = "torch.optim.SparseAdam"


@dataclass
class AdagradConfig(OptimizerConfig):
    """:class:`torch.optim.Adagrad`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(AdagradConfig(lr_decay=0.1))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["lr_decay"]
        ('Adagrad', 0.1)
    """

    lr: float = 1e-2
    lr_decay: float = 0.0
    weight_decay: float = 0.0
    initial_accumulator_value: float = 0.0
    eps: float = 1e-10
    foreach: bool | None = None
    maximize: bool = False
    differentiable: bool = False
    fused: bool | None = None
    _target_: str = "torch.optim.Adagrad"


@dataclass
class RAdamConfig(OptimizerConfig):
    """:class:`torch.optim.RAdam`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(RAdamConfig(lr=0.5))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["lr"]
        ('RAdam', 0.5)
    """

    lr: float = 1e-3
    betas: Any = _betas()
    eps: float = 1e-8
    weight_decay: float = 0.0
    decoupled_weight_decay: bool = False
    foreach: bool | None = None
    maximize: bool = False
    capturable: bool = False
    differentiable: bool = False
    _target_: str = "torch.optim.RAdam"


@dataclass
class NAdamConfig(OptimizerConfig):
    """:class:`torch.optim.NAdam`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = instantiate(NAdamConfig(momentum_decay=0.01))(params=torch.nn.Linear(2, 2).parameters())
        >>> type(opt).__name__, opt.defaults["momentum_decay"]
        ('NAdam', 0.01)
    """

    lr: float = 2e-3
    betas: Any = _betas()
    eps: float = 1e-8
    weight_decay: float = 0.0
    momentum_decay: float = 4e-3
    decoupled_weight_decay: bool = False
    foreach: bool | None = None
    maximize: bool = False
    capturable: bool = False
    differentiable: bool = False
    _target_: str = "torch.optim.NAdam"


@dataclass
class LRSchedulerConfig(ConfigBase):
    """Parent of LR scheduler configs: a partial completed with the optimizer; steps once per batch.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=1.0)
        >>> sched = instantiate(StepLRConfig(step_size=1, gamma=0.5))(opt)
        >>> opt.step()
        >>> sched.step()
        >>> isinstance(StepLRConfig(step_size=1), LRSchedulerConfig), sched.get_last_lr()
        (True, [0.5])
    """

    _partial_: bool = True


@dataclass
class StepLRConfig(LRSchedulerConfig):
    """:class:`torch.optim.lr_scheduler.StepLR`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=1.0)
        >>> instantiate(StepLRConfig(step_size=2))(opt).step_size
        2
    """

    step_size: int = MISSING
    gamma: float = 0.1
    last_epoch: int = -1
    _target_: str = "torch.optim.lr_scheduler.StepLR"


@dataclass
class ExponentialLRConfig(LRSchedulerConfig):
    """:class:`torch.optim.lr_scheduler.ExponentialLR`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=1.0)
        >>> sched = instantiate(ExponentialLRConfig(gamma=0.5))(opt)
        >>> opt.step()
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.5]
    """

    gamma: float = MISSING
    last_epoch: int = -1
    _target_: str = "torch.optim.lr_scheduler.ExponentialLR"


@dataclass
class CosineAnnealingLRConfig(LRSchedulerConfig):
    """:class:`torch.optim.lr_scheduler.CosineAnnealingLR`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=1.0)
        >>> sched = instantiate(CosineAnnealingLRConfig(T_max=2))(opt)
        >>> opt.step()
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.5]
    """

    T_max: int = MISSING
    eta_min: float = 0.0
    last_epoch: int = -1
    _target_: str = "torch.optim.lr_scheduler.CosineAnnealingLR"


@dataclass
class LinearLRConfig(LRSchedulerConfig):
    """:class:`torch.optim.lr_scheduler.LinearLR`.

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> opt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=1.0)
        >>> sched = instantiate(LinearLRConfig(start_factor=0.5, total_iters=2))(opt)
        >>> sched.get_last_lr()
        [0.5]
        >>> opt.step()
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.75]
    """

    start_factor: float = 1.0 / 3
    end_factor: float = 1.0
    total_iters: int = 5
    last_epoch: int = -1
    _target_: str = "torch.optim.lr_scheduler.LinearLR"
