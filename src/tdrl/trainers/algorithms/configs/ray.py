"""Ray configs (the ``ray`` section of a ``tdrl train`` run is :class:`~tdrl.trainers.algorithms.configs.run.RaySection`): the Hydra configs ``weight_updater/ray``,
``weight_sync_scheme/ray`` (TorchRL's names) and ``collector/ray``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omegaconf import MISSING

from tdrl.trainers.algorithms.configs.common import ConfigBase

__all__ = ["RayCollectorConfig", "RayWeightSyncSchemeConfig", "RayWeightUpdaterConfig"]


@dataclass
class RayWeightUpdaterConfig(ConfigBase):
    """:class:`~tdrl.collectors.RayWeightUpdater` (partial: the collector adds the actors and weights)."""

    _partial_: bool = True
    policy_weights: Any = None
    remote_collectors: Any = None
    max_interval: int = 0
    _target_: str = "tdrl.collectors.RayWeightUpdater"


@dataclass
class RayWeightSyncSchemeConfig(ConfigBase):
    """:class:`~tdrl.weight_update.RayWeightSyncScheme`: weights through Ray's object store.

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(RayWeightSyncSchemeConfig())).__name__
        'RayWeightSyncScheme'
    """

    _partial_: bool = False
    strategy: str = "tensordict"
    backend: str = "gloo"
    _target_: str = "tdrl.weight_update.RayWeightSyncScheme"


@dataclass
class RayCollectorConfig(ConfigBase):
    """:class:`~tdrl.collectors.distributed.RayCollector`: collectors in Ray actors."""

    _partial_: bool = False
    create_env_fn: Any = MISSING
    policy: Any = None
    policy_factory: Any = None
    frames_per_batch: int = MISSING
    total_frames: int = -1
    num_collectors: int | None = None
    collector_class: Any = "single"
    collector_kwargs: Any = None
    num_workers_per_collector: int = 1
    sync: bool = False
    ray_init_config: Any = None
    remote_configs: Any = None
    update_after_each_batch: bool = False
    max_weight_update_interval: int = -1
    replay_buffer: Any = None
    track_policy_version: bool = False
    timeout: float | None = 600.0
    _target_: str = "tdrl.collectors.distributed.RayCollector"
