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
    """:class:`~tdrl.weight_update.MultiProcessWeightSyncScheme`: weights sent to each worker through its pipe."""

    _partial_: bool = False
    strategy: str = "tensordict"
    sync: bool = True
    _target_: str = "tdrl.weight_update.MultiProcessWeightSyncScheme"


@dataclass
class NoWeightSyncSchemeConfig(ConfigBase):
    """:class:`~tdrl.weight_update.NoWeightSyncScheme`: the workers keep their initial weights."""

    _partial_: bool = False
    strategy: str = "tensordict"
    _target_: str = "tdrl.weight_update.NoWeightSyncScheme"


@dataclass
class VanillaWeightUpdaterConfig(ConfigBase):
    """:class:`~tdrl.collectors.VanillaWeightUpdater` (partial: completed with the weights)."""

    _partial_: bool = True
    weight_getter: Any = None
    policy_weights: Any = MISSING
    _target_: str = "tdrl.collectors.VanillaWeightUpdater"


@dataclass
class MultiProcessedWeightUpdaterConfig(ConfigBase):
    """:class:`~tdrl.collectors.MultiProcessedWeightUpdater` (partial: completed with the weights)."""

    _partial_: bool = True
    get_server_weights: Any = None
    policy_weights: Any = MISSING
    _target_: str = "tdrl.collectors.MultiProcessedWeightUpdater"


@dataclass
class QMixerNetworkConfig(ConfigBase):
    """:class:`~tdrl.modules.QMixer` (QMIX, https://arxiv.org/abs/1803.11485)."""

    _partial_: bool = False
    state_shape: Any = MISSING
    mixing_embed_dim: int = MISSING
    n_agents: int = MISSING
    device: Any = None
    _target_: str = "tdrl.modules.QMixer"


@dataclass
class VDNMixerNetworkConfig(ConfigBase):
    """:class:`~tdrl.modules.VDNMixer` (value decomposition, https://arxiv.org/abs/1706.05296)."""

    _partial_: bool = False
    n_agents: int = MISSING
    device: Any = None
    _target_: str = "tdrl.modules.VDNMixer"
