"""TorchRL's historical module path ``torchrl.data.postprocs.postprocs``."""

from tdrl.data.postprocs.densify import DensifyReward
from tdrl.data.postprocs.multistep import MultiStep

__all__ = ["DensifyReward", "MultiStep"]
