"""Post-processing of collected batches."""

from tdrl.data.postprocs.multistep import MultiStep

__all__ = ["MultiStep"]
