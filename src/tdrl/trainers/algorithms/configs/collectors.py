"""Configs for collectors (group ``collector``: ``sync``, ``async``, ``multi_sync``, ``multi_async``).

Each ``_target_`` is a thin factory carrying its collector's signature: it turns a YAML
``exploration_type`` string (``"RANDOM"``) into an :class:`~tdrl.envs.ExplorationType`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omegaconf import MISSING, ListConfig
from tensordict.nn import InteractionType

from tdrl.collectors import AsyncCollector, Collector, MultiAsyncCollector, MultiSyncCollector
from tdrl.trainers.algorithms.configs.common import ConfigBase

__all__ = [
    "AsyncCollectorConfig", "BaseCollectorConfig", "CollectorConfig", "MultiAsyncCollectorConfig",
    "MultiSyncCollectorConfig", "make_async_collector", "make_collector", "make_multi_async_collector",
    "make_multi_sync_collector",
]


def _collector_factory(cls: type, signature_source: Callable) -> Callable[..., Any]:
    @functools.wraps(cls, assigned=("__doc__",), updated=())
    def make(*args: Any, **kwargs: Any) -> Any:
        value = kwargs.get("exploration_type")
        if isinstance(value, str):
            kwargs["exploration_type"] = InteractionType[value.upper()]
        if isinstance(kwargs.get("create_env_fn"), ListConfig):  # a YAML list of env constructors
            kwargs["create_env_fn"] = list(kwargs["create_env_fn"])
        return cls(*args, **kwargs)

    params = [p for name, p in inspect.signature(signature_source).parameters.items() if name != "self"]
    make.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    make.__name__ = f"make_{cls.__name__}"
    return make


make_collector = _collector_factory(Collector, Collector.__init__)
make_multi_sync_collector = _collector_factory(MultiSyncCollector, MultiSyncCollector.__init__)
make_multi_async_collector = _collector_factory(MultiAsyncCollector, MultiAsyncCollector.__init__)
# AsyncCollector forwards its keywords to a Collector run in a thread: same accepted arguments.
make_async_collector = _collector_factory(AsyncCollector, Collector.__init__)


@dataclass
class BaseCollectorConfig(ConfigBase):
    """Fields shared by every collector.

    Examples:
        >>> cfg = CollectorConfig(frames_per_batch=8)
        >>> isinstance(cfg, BaseCollectorConfig), isinstance(MultiSyncCollectorConfig(), BaseCollectorConfig)
        (True, True)
    """

    _partial_: bool = False
    create_env_fn: Any = MISSING
    policy: Any = None
    policy_factory: Any = None
    frames_per_batch: int | None = None
    total_frames: int = -1
    init_random_frames: int | None = None
    device: Any = None
    storing_device: Any = None
    policy_device: Any = None
    env_device: Any = None
    create_env_kwargs: Any = None
    max_frames_per_traj: int | None = None
    reset_at_each_iter: bool = False
    postproc: Any = None
    split_trajs: bool | None = None
    exploration_type: Any = "RANDOM"
    reset_when_done: bool = True
    set_truncated: bool = False
    replay_buffer: Any = None
    extend_buffer: bool = True
    trust_policy: bool | None = None
    compile_policy: Any = None
    num_threads: int | None = None
    weight_updater: Any = None
    weight_sync_schemes: Any = None
    track_policy_version: bool = False
    no_cuda_sync: bool = False
    cudagraph_policy: Any = False


@dataclass
class _SingleCollectorFields(BaseCollectorConfig):
    track_traj_ids: bool = True
    return_same_td: bool = False
    use_buffers: bool | None = None


@dataclass
class CollectorConfig(_SingleCollectorFields):
    """:class:`~tdrl.collectors.Collector`: steps the env in this process.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.envs_libs import GymEnvConfig
        >>> collector = instantiate(CollectorConfig(create_env_fn=GymEnvConfig(env_name="CartPole-v1"),
        ...                                         frames_per_batch=8, total_frames=8))
        >>> next(iter(collector)).numel()
        8
        >>> collector.shutdown()
    """

    auto_register_policy_transforms: bool | None = None
    _target_: str = "tdrl.trainers.algorithms.configs.collectors.make_collector"


@dataclass
class AsyncCollectorConfig(_SingleCollectorFields):
    """:class:`~tdrl.collectors.AsyncCollector`: a collector running in a background thread.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.envs_libs import GymEnvConfig
        >>> collector = instantiate(AsyncCollectorConfig(create_env_fn=GymEnvConfig(env_name="CartPole-v1"),
        ...                                              frames_per_batch=8, total_frames=8))
        >>> type(collector).__name__, next(iter(collector)).numel()
        ('AsyncCollector', 8)
        >>> collector.shutdown()
    """

    _target_: str = "tdrl.trainers.algorithms.configs.collectors.make_async_collector"


@dataclass
class _MultiCollectorFields(BaseCollectorConfig):
    num_workers: int | None = None
    collector_class: Any = None
    update_at_each_batch: bool = False
    preemptive_threshold: float | None = None
    num_sub_threads: int = 1
    cat_results: Any = None
    use_buffers: bool | None = None
    mp_start_method: str | None = None
    shutdown_timeout: float = 5.0


@dataclass
class MultiSyncCollectorConfig(_MultiCollectorFields):
    """:class:`~tdrl.collectors.MultiSyncCollector`: worker processes, batches gathered in lockstep.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.envs_libs import GymEnvConfig
        >>> cfg = MultiSyncCollectorConfig(create_env_fn=[GymEnvConfig(env_name="CartPole-v1", _partial_=True)] * 2,
        ...                                frames_per_batch=16, total_frames=16)
        >>> make = instantiate(cfg, _partial_=True)  # the processes start when make() is called
        >>> make.func.__name__, make.keywords["frames_per_batch"]
        ('make_MultiSyncCollector', 16)
    """

    _target_: str = "tdrl.trainers.algorithms.configs.collectors.make_multi_sync_collector"


@dataclass
class MultiAsyncCollectorConfig(_MultiCollectorFields):
    """:class:`~tdrl.collectors.MultiAsyncCollector`: worker processes, each batch from the first one ready.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.envs_libs import GymEnvConfig
        >>> cfg = MultiAsyncCollectorConfig(create_env_fn=[GymEnvConfig(env_name="CartPole-v1", _partial_=True)] * 2,
        ...                                 frames_per_batch=16, total_frames=16)
        >>> make = instantiate(cfg, _partial_=True)  # the processes start when make() is called
        >>> make.func.__name__, make.keywords["frames_per_batch"]
        ('make_MultiAsyncCollector', 16)
    """

    _target_: str = "tdrl.trainers.algorithms.configs.collectors.make_multi_async_collector"
