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
    """A :class:`~tensordict.nn.TensorDictSequential` of module configs (``network/tensordict_sequential``).

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.trainers.algorithms.configs import MLPConfig, TensorDictModuleConfig
        >>> mlp = MLPConfig(in_features=2, out_features=2, num_cells=[4])
        >>> layer = TensorDictModuleConfig(module=mlp, in_keys=["observation"], out_keys=["hidden"])
        >>> seq = instantiate(TensorDictSequentialConfig(modules=[layer]))
        >>> seq(TensorDict(observation=torch.zeros(3, 2), batch_size=[3]))["hidden"].shape
        torch.Size([3, 2])
    """

    modules: Any = None
    partial_tolerant: bool = False
    selected_out_keys: Any = None
    inplace: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.module_wrappers.make_tensordict_sequential"


@dataclass
class TanhModuleConfig(ModelConfig):
    """A :class:`~tdrl.modules.TanhModule` (``model/tanh_module``).

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> from tensordict import TensorDict
        >>> tanh = instantiate(TanhModuleConfig(in_keys=["action"], low=-2.0, high=2.0))
        >>> tanh(TensorDict(action=torch.tensor([0.0, 100.0])))["action"]
        tensor([0., 2.])
    """

    spec: Any = None
    low: Any = None
    high: Any = None
    clamp: bool = False
    _target_: str = "tdrl.trainers.algorithms.configs.module_wrappers.make_tanh_module"


@dataclass
class AdditiveGaussianModuleConfig(ModelConfig):
    """An :class:`~tdrl.modules.AdditiveGaussianModule` (``exploration/additive_gaussian``).

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.data import Bounded
        >>> spec = Bounded(-1.0, 1.0, shape=(2,))
        >>> noise = instantiate(AdditiveGaussianModuleConfig(spec=spec, sigma_init=0.5, annealing_num_steps=10))
        >>> type(noise).__name__, noise.sigma.item()
        ('AdditiveGaussianModule', 0.5)
    """

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


