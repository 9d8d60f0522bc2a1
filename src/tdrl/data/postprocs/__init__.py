"""Post-processing of collected batches."""

from tdrl.data.postprocs.densify import DensifyReward
from tdrl.data.postprocs.multistep import MultiStep

__all__ = ["DensifyReward", "MultiStep"]
