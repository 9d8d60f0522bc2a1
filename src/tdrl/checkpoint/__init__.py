"""tdrl.checkpoint: one manifest for a run's components, restored in full or in part (TorchRL's ``torchrl.checkpoint``)."""

from tdrl.checkpoint._types import (
    CheckpointBest,
    CheckpointError,
    CheckpointFormat,
    CheckpointLoadResult,
    CheckpointMetricMode,
    CheckpointOptions,
    CheckpointStrictness,
    StateDictFormat,
)
from tdrl.checkpoint.adapters import (
    CheckpointAdapter,
    DumpLoadCheckpointAdapter,
    GlobalRNGState,
    JSONCheckpointAdapter,
    StateDictCheckpointAdapter,
)
from tdrl.checkpoint.checkpoint import Checkpoint
from tdrl.checkpoint.rotation import CheckpointRotation

__all__ = [
    "Checkpoint",
    "CheckpointAdapter",
    "CheckpointBest",
    "CheckpointError",
    "CheckpointFormat",
    "CheckpointLoadResult",
    "CheckpointMetricMode",
    "CheckpointOptions",
    "CheckpointRotation",
    "CheckpointStrictness",
    "DumpLoadCheckpointAdapter",
    "GlobalRNGState",
    "JSONCheckpointAdapter",
    "StateDictCheckpointAdapter",
    "StateDictFormat",
]
