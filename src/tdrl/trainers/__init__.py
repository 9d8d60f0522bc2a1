"""tdrl.trainers: the Trainer, its hooks, algorithm trainers and the ``tdrl`` command."""

from __future__ import annotations

from tdrl.lazy import lazy_exports

# Imported on first use (tdrl.lazy): the tdrl command lives in this package and answers --help without torch.
_MODULES: dict[str, tuple[str, ...]] = {
    "tdrl.trainers.hooks": (
        "BatchSubSampler", "ClearCudaCache", "CountFramesLog", "DefaultOptimizationStepper", "EarlyStopping",
        "LogEpisodeReturn", "LogScalar", "LogTiming", "LogValidationReward", "LRSchedulerHook",
        "OptimizationStepper", "OptimizerHook", "ReplayBufferTrainer", "RewardNormalizer", "SelectKeys",
        "TargetNetUpdaterHook", "TrainerHookBase", "UpdateWeights", "UTDRHook", "ValueEstimatorHook", "mask_batch"
    ),
    "tdrl.trainers.trainer": ("Trainer",),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

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
    "Trainer",
    "TrainerHookBase",
    "UTDRHook",
    "UpdateWeights",
    "ValueEstimatorHook",
    "mask_batch",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
