"""tdrl.collectors: data collectors (TorchRL's names, and the older aliases)."""

from tdrl.collectors._base import BaseCollector
from tdrl.collectors._single import Collector
from tdrl.collectors.utils import split_trajectories
from tdrl.modules import RandomPolicy

# Older TorchRL names, still common in user code.
SyncDataCollector = Collector
DataCollectorBase = BaseCollector

__all__ = [
    "BaseCollector",
    "Collector",
    "DataCollectorBase",
    "RandomPolicy",
    "SyncDataCollector",
    "split_trajectories",
]
