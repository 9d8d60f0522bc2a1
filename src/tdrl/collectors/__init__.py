"""tdrl.collectors: data collectors (TorchRL's names, and the older aliases)."""

from tdrl.collectors._base import BaseCollector
from tdrl.collectors._evaluator import Evaluator
from tdrl.collectors._multi_async import MultiAsyncCollector
from tdrl.collectors._multi_base import MultiCollector
from tdrl.collectors._multi_sync import MultiSyncCollector
from tdrl.collectors._single import Collector
from tdrl.collectors._single_async import AsyncCollector
from tdrl.collectors.utils import split_trajectories
from tdrl.modules import RandomPolicy
from tdrl.weight_update import (
    MultiProcessedWeightUpdater,
    RayWeightUpdater,
    VanillaWeightUpdater,
    WeightUpdaterBase,
)

# Older TorchRL names, still common in user code.
SyncDataCollector = Collector
DataCollectorBase = BaseCollector
MultiSyncDataCollector = MultiSyncCollector
MultiaSyncDataCollector = MultiAsyncCollector
aSyncDataCollector = AsyncCollector

__all__ = [
    "AsyncCollector",
    "BaseCollector",
    "Collector",
    "DataCollectorBase",
    "Evaluator",
    "MultiAsyncCollector",
    "MultiCollector",
    "MultiProcessedWeightUpdater",
    "MultiSyncCollector",
    "MultiSyncDataCollector",
    "MultiaSyncDataCollector",
    "RandomPolicy",
    "RayWeightUpdater",
    "SyncDataCollector",
    "VanillaWeightUpdater",
    "WeightUpdaterBase",
    "aSyncDataCollector",
    "split_trajectories",
]
