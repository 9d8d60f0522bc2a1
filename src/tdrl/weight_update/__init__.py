"""tdrl.weight_update: weight updaters and weight-sync schemes (how new policy weights reach collector workers)."""

from tdrl.weight_update._schemes import (
    MultiProcessWeightSyncScheme,
    NoWeightSyncScheme,
    SharedMemWeightSyncScheme,
    WeightStrategy,
    WeightSyncScheme,
)
from tdrl.weight_update._updaters import MultiProcessedWeightUpdater, VanillaWeightUpdater, WeightUpdaterBase
from tdrl.weight_update.ray import RayTransport, RayWeightSyncScheme, RayWeightUpdater

__all__ = [
    "MultiProcessWeightSyncScheme",
    "MultiProcessedWeightUpdater",
    "NoWeightSyncScheme",
    "RayTransport",
    "RayWeightSyncScheme",
    "RayWeightUpdater",
    "SharedMemWeightSyncScheme",
    "VanillaWeightUpdater",
    "WeightStrategy",
    "WeightSyncScheme",
    "WeightUpdaterBase",
]
