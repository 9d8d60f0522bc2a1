"""Configs that assemble policies from parts: ``network/tensordict_sequential``, ``model/tanh_module`` and
``exploration/additive_gaussian`` (TorchRL's names), e.g. a deterministic DDPG actor ``MLP -> TanhModule``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tdrl.trainers.algorithms.configs.module_factories import (
    make_additive_gaussian_module,
    make_tanh_module,
    make_tensordict_sequential,
)
from tdrl.trainers.algorithms.configs.modules import ModelConfig

__all__ = [
    "AdditiveGaussianModuleConfig", "TanhModuleConfig", "TensorDictSequentialConfig",
    "make_additive_gaussian_module", "make_tanh_module", "make_tensordict_sequential",
]


@dataclass
class TensorDictSequentialConfig(ModelConfig):
    """A :class:`~tensordict.nn.TensorDictSequential` of module configs (``network/tensordict_sequential``)."""

    modules: Any = None
    partial_tolerant: bool = False
    selected_out_keys: Any = None
    inplace: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.module_wrappers.make_tensordict_sequential"


@dataclass
class TanhModuleConfig(ModelConfig):
    """A :class:`~tdrl.modules.TanhModule` (``model/tanh_module``)."""

    spec: Any = None
    low: Any = None
    high: Any = None
    clamp: bool = False
    _target_: str = "tdrl.trainers.algorithms.configs.module_wrappers.make_tanh_module"


@dataclass
class AdditiveGaussianModuleConfig(ModelConfig):
    """An :class:`~tdrl.modules.AdditiveGaussianModule` (``exploration/additive_gaussian``)."""

    spec: Any = None
    sigma_init: float = 1.0
    sigma_end: float = 0.1
    annealing_num_steps: int = 1000
    mean: float = 0.0
    std: float = 1.0
    action_key: Any = "action"
    safe: bool = False
    device: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.module_wrappers.make_additive_gaussian_module"


