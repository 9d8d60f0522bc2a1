"""Trainer hooks: the standard operations registered at the :class:`~tdrl.trainers.Trainer`'s hook points."""

from tdrl.trainers.hooks.base import DefaultOptimizationStepper, OptimizationStepper, TrainerHookBase
from tdrl.trainers.hooks.data import (
    BatchSubSampler,
    ReplayBufferTrainer,
    RewardNormalizer,
    SelectKeys,
    mask_batch,
)
from tdrl.trainers.hooks.optim import (
    ClearCudaCache,
    EarlyStopping,
    LRSchedulerHook,
    OptimizerHook,
    TargetNetUpdaterHook,
    UpdateWeights,
    ValueEstimatorHook,
)
from tdrl.trainers.hooks.scalars import (
    CountFramesLog,
    LogEpisodeReturn,
    LogScalar,
    LogTiming,
    LogValidationReward,
    UTDRHook,
)

__all__ = [
    "BatchSubSampler",
    "ClearCudaCache",
    "CountFramesLog",
    "DefaultOptimizationStepper",
    "EarlyStopping",
    "LRSchedulerHook",
    "LogEpisodeReturn",
    "LogScalar",
    "LogTiming",
    "LogValidationReward",
    "OptimizationStepper",
    "OptimizerHook",
    "ReplayBufferTrainer",
    "RewardNormalizer",
    "SelectKeys",
    "TargetNetUpdaterHook",
    "TrainerHookBase",
    "UTDRHook",
    "UpdateWeights",
    "ValueEstimatorHook",
    "mask_batch",
]
