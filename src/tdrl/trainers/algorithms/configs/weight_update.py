"""Configs for how collectors receive policy weights: groups ``weight_sync_scheme`` (``shared_mem``,
``multiprocess``, ``no_sync``) and ``weight_updater`` (``vanilla``, ``multiprocessed``), and the multi-agent
mixer networks (``network/qmixer``, ``network/vdn_mixer``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omegaconf import MISSING

from tdrl.trainers.algorithms.configs.common import ConfigBase

__all__ = [
    "MultiProcessWeightSyncSchemeConfig", "MultiProcessedWeightUpdaterConfig", "NoWeightSyncSchemeConfig",
    "QMixerNetworkConfig", "SharedMemWeightSyncSchemeConfig", "VDNMixerNetworkConfig",
    "VanillaWeightUpdaterConfig",
]


@dataclass
class SharedMemWeightSyncSchemeConfig(ConfigBase):
    """:class:`~tdrl.weight_update.SharedMemWeightSyncScheme`: workers read one shared-memory copy.

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(SharedMemWeightSyncSchemeConfig())).__name__
        'SharedMemWeightSyncScheme'
    """

    _partial_: bool = False
    strategy: str = "tensordict"
    sync: bool = True
    per_worker_weights: bool = False
    _target_: str = "tdrl.weight_update.SharedMemWeightSyncScheme"


@dataclass
class MultiProcessWeightSyncSchemeConfig(ConfigBase):
    """:class:`~tdrl.weight_update.MultiProcessWeightSyncScheme`: weights sent to each worker through its pipe.

    Examples:
        >>> from hydra.utils import instantiate
        >>> scheme = instantiate(MultiProcessWeightSyncSchemeConfig(strategy="state_dict"))
        >>> type(scheme).__name__, scheme.strategy.extract_as
        ('MultiProcessWeightSyncScheme', 'state_dict')
    """

    _partial_: bool = False
    strategy: str = "tensordict"
    sync: bool = True
    _target_: str = "tdrl.weight_update.MultiProcessWeightSyncScheme"


@dataclass
class NoWeightSyncSchemeConfig(ConfigBase):
    """:class:`~tdrl.weight_update.NoWeightSyncScheme`: the workers keep their initial weights.

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(NoWeightSyncSchemeConfig())).__name__
        'NoWeightSyncScheme'
    """

    _partial_: bool = False
    strategy: str = "tensordict"
    _target_: str = "tdrl.weight_update.NoWeightSyncScheme"


@dataclass
class VanillaWeightUpdaterConfig(ConfigBase):
    """:class:`~tdrl.collectors.VanillaWeightUpdater` (partial: completed with the weights).

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> from tensordict import TensorDict
        >>> weights = TensorDict.from_module(torch.nn.Linear(2, 1))
        >>> updater = instantiate(VanillaWeightUpdaterConfig(policy_weights=weights))()
        >>> type(updater).__name__, updater.policy_weights is weights
        ('VanillaWeightUpdater', True)
    """

    _partial_: bool = True
    weight_getter: Any = None
    policy_weights: Any = MISSING
    _target_: str = "tdrl.collectors.VanillaWeightUpdater"


@dataclass
class MultiProcessedWeightUpdaterConfig(ConfigBase):
    """:class:`~tdrl.collectors.MultiProcessedWeightUpdater` (partial: completed with the weights).

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> from tensordict import TensorDict
        >>> weights = TensorDict.from_module(torch.nn.Linear(2, 1))
        >>> updater = instantiate(MultiProcessedWeightUpdaterConfig(policy_weights=weights))()
        >>> type(updater).__name__
        'MultiProcessedWeightUpdater'
    """

    _partial_: bool = True
    get_server_weights: Any = None
    policy_weights: Any = MISSING
    _target_: str = "tdrl.collectors.MultiProcessedWeightUpdater"


@dataclass
class QMixerNetworkConfig(ConfigBase):
    """:class:`~tdrl.modules.QMixer` (QMIX, https://arxiv.org/abs/1803.11485).

    Examples:
        >>> from hydra.utils import instantiate
        >>> mixer = instantiate(QMixerNetworkConfig(state_shape=[3], mixing_embed_dim=4, n_agents=2))
        >>> type(mixer).__name__, mixer.n_agents
        ('QMixer', 2)
    """

    _partial_: bool = False
    state_shape: Any = MISSING
    mixing_embed_dim: int = MISSING
    n_agents: int = MISSING
    device: Any = None
    _target_: str = "tdrl.modules.QMixer"


@dataclass
class VDNMixerNetworkConfig(ConfigBase):
    """:class:`~tdrl.modules.VDNMixer` (value decomposition, https://arxiv.org/abs/1706.05296).

    Examples:
        >>> from hydra.utils import instantiate
        >>> mixer = instantiate(VDNMixerNetworkConfig(n_agents=2))
        >>> type(mixer).__name__, mixer.n_agents
        ('VDNMixer', 2)
    """

    _partial_: bool = False
    n_agents: int = MISSING
    device: Any = None
    _target_: str = "tdrl.modules.VDNMixer"
