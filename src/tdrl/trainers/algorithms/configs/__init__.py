"""Hydra structured configs for tdrl, registered under TorchRL's group and config names.

Registration happens when the first name is taken from this package (``from
tdrl.trainers.algorithms.configs import *``, as TorchRL's examples do, or any single name), and in
by :func:`compose_config`; importing a submodule alone registers nothing
(``docs/differences.md``).
"""

from __future__ import annotations

import importlib

from tdrl.lazy import lazy_exports

# Imported on first use (tdrl.lazy), so that the tdrl command reads the run schema (configs.run) and composes
# presets (configs.presets) without torch. The first name taken from this package registers every config in
# Hydra's ConfigStore (TorchRL registers on import); compose_config registers too.
_MODULES: dict[str, tuple[str, ...]] = {
    "tdrl.trainers.algorithms.configs._register": (
        "REGISTRY", "register_configs"
    ),
    "tdrl.trainers.algorithms.configs.collectors": (
        "AsyncCollectorConfig", "BaseCollectorConfig", "CollectorConfig", "MultiAsyncCollectorConfig",
        "MultiSyncCollectorConfig"
    ),
    "tdrl.trainers.algorithms.configs.common": (
        "ConfigBase",
    ),
    "tdrl.trainers.algorithms.configs.dreamer_v3": (
        "DreamerV3DiscreteActorConfig", "DreamerV3ImageDecoderConfig", "DreamerV3ImageEncoderConfig",
        "DreamerV3LossConfig", "DreamerV3MLPConfig", "DreamerV3OptimizationStepperConfig", "DreamerV3OptimizerConfig",
        "DreamerV3SeededPolicyConfig", "DreamerV3UpdateRatioConfig", "RSSMStateEstimatorV3Config"
    ),
    "tdrl.trainers.algorithms.configs.data": (
        "LazyMemmapStorageConfig", "LazyStackStorageConfig", "LazyTensorStorageConfig", "ListStorageConfig",
        "PrioritizedSamplerConfig", "RandomSamplerConfig", "ReplayBufferBaseConfig", "ReplayBufferConfig",
        "RoundRobinWriterConfig", "SamplerConfig", "SamplerWithoutReplacementConfig", "SliceSamplerConfig",
        "SliceSamplerWithoutReplacementConfig", "StorageConfig", "TensorDictReplayBufferConfig",
        "TensorStorageConfig", "WriterConfig"
    ),
    "tdrl.trainers.algorithms.configs.envs": (
        "BatchedEnvConfig", "EnvConfig", "TransformedEnvConfig"
    ),
    "tdrl.trainers.algorithms.configs.envs_libs": (
        "DMControlEnvConfig", "EnvLibsConfig", "GymEnvConfig"
    ),
    "tdrl.trainers.algorithms.configs.envs_libs_extra": (
        "MOGymEnvConfig", "MultiThreadedEnvConfig", "PettingZooEnvConfig", "VmasEnvConfig"
    ),
    "tdrl.trainers.algorithms.configs.hooks": (
        "BatchSubSamplerConfig", "ClearCudaCacheConfig", "CountFramesLogConfig", "EarlyStoppingConfig",
        "HookConfig", "LogScalarConfig", "LogTimingConfig", "RewardNormalizerConfig", "SelectKeysConfig"
    ),
    "tdrl.trainers.algorithms.configs.instantiate": (
        "compose_config", "infer_sizes", "run_config"
    ),
    "tdrl.trainers.algorithms.configs.logging": (
        "CSVLoggerConfig", "LoggerConfig", "TensorboardLoggerConfig", "WandbLoggerConfig"
    ),
    "tdrl.trainers.algorithms.configs.modules": (
        "ActivationConfig", "AggregatorConfig", "CategoricalModelConfig", "ConvNetConfig", "LayerConfig",
        "MLPConfig", "ModelConfig", "NetworkConfig", "NormConfig", "QValueModelConfig", "TanhNormalModelConfig",
        "TensorDictModuleConfig", "ValueModelConfig"
    ),
    "tdrl.trainers.algorithms.configs.objectives": (
        "A2CLossConfig", "DDPGLossConfig", "DQNLossConfig", "GAEConfig", "HardUpdateConfig", "LossConfig",
        "PPOLossConfig", "ReinforceLossConfig", "SACLossConfig", "SoftUpdateConfig", "TD3LossConfig",
        "TargetNetUpdaterConfig"
    ),
    "tdrl.trainers.algorithms.configs.presets": (
        "ConfigError", "compose_run_config", "describe", "list_presets", "loss_fields", "validate_run_config"
    ),
    "tdrl.trainers.algorithms.configs.run": (
        "RunConfig",
    ),
    "tdrl.trainers.algorithms.configs.trainers": (
        "A2CTrainerConfig", "CQLTrainerConfig", "DDPGTrainerConfig", "DQNTrainerConfig", "IQLTrainerConfig",
        "OffPolicyTrainerConfig", "OnPolicyTrainerConfig", "PPOTrainerConfig", "ReinforceTrainerConfig",
        "SACTrainerConfig", "TD3TrainerConfig", "TrainerConfig"
    ),
    "tdrl.trainers.algorithms.configs.transforms": (
        "ActionDiscretizerConfig", "ActionMaskConfig", "CatFramesConfig", "CatTensorsConfig", "ClipTransformConfig",
        "ComposeConfig", "DeviceCastTransformConfig", "DiscreteActionProjectionConfig", "DoubleToFloatConfig",
        "ExcludeTransformConfig", "FlattenObservationConfig", "FrameSkipTransformConfig", "GrayScaleConfig",
        "InitTrackerConfig", "MultiStepTransformConfig", "NoopResetEnvConfig", "ObservationNormConfig",
        "RenameTransformConfig", "ResizeConfig", "RewardClippingConfig", "RewardScalingConfig", "RewardSumConfig",
        "SelectTransformConfig", "SqueezeTransformConfig", "StepCounterConfig", "TargetReturnConfig",
        "ToTensorImageConfig", "TransformConfig", "UnaryTransformConfig", "UnsqueezeTransformConfig",
        "VecNormConfig", "VecNormV2Config"
    ),
    "tdrl.trainers.algorithms.configs.utils": (
        "ASGDConfig", "AdadeltaConfig", "AdagradConfig", "AdamConfig", "AdamWConfig", "AdamaxConfig",
        "CosineAnnealingLRConfig", "ExponentialLRConfig", "LBFGSConfig", "LRSchedulerConfig", "LinearLRConfig",
        "NAdamConfig", "OptimizerConfig", "RAdamConfig", "RMSpropConfig", "RpropConfig", "SGDConfig",
        "SparseAdamConfig", "StepLRConfig"
    ),
    "tdrl.trainers.algorithms.configs.validation": (
        "ConfigValidationError", "signature_of", "validate_config"
    ),
    "tdrl.trainers.algorithms.configs.transforms_extra": (
        "BinarizeRewardConfig", "CenterCropConfig", "CropConfig", "DTypeCastTransformConfig",
        "LineariseRewardsConfig", "PermuteTransformConfig", "RandomCropTensorDictConfig", "RemoveEmptySpecsConfig",
        "Reward2GoTransformConfig", "SignTransformConfig", "TensorDictPrimerConfig", "TimeMaxPoolConfig",
        "TimerConfig", "TokenizerConfig", "TrajCounterConfig"
    ),
    "tdrl.trainers.algorithms.configs.transforms_more": (
        "ActionScalingConfig", "AutoResetTransformConfig", "BatchSizeTransformConfig", "BurnInTransformConfig",
        "ConditionalPolicySwitchConfig", "ConditionalSkipConfig", "EndOfLifeTransformConfig", "ExpandAsConfig",
        "FiniteTensorDictCheckConfig", "FlattenActionConfig", "HashConfig", "MeanActionSelectorConfig",
        "ModuleTransformConfig", "MultiActionConfig", "NextObservationDeltaConfig",
        "NextStateReconstructorConfig", "PinMemoryTransformConfig", "StackConfig", "SuccessRewardConfig",
        "TerminateTransformConfig", "VecGymEnvTransformConfig"
    ),
    "tdrl.trainers.algorithms.configs.objectives_tqc": (
        "TQCLossConfig",
    ),
    "tdrl.trainers.algorithms.configs.weight_sync_schemes": (
        "WeightSyncSchemeConfig", "WeightUpdaterConfig"
    ),
    "tdrl.trainers.algorithms.configs.data_ensemble": (
        "StorageEnsembleConfig",
    ),
    "tdrl.trainers.algorithms.configs.module_wrappers": (
        "AdditiveGaussianModuleConfig", "TanhModuleConfig", "TensorDictSequentialConfig"
    ),
    "tdrl.trainers.algorithms.configs.weight_update": (
        "MultiProcessWeightSyncSchemeConfig", "MultiProcessedWeightUpdaterConfig", "NoWeightSyncSchemeConfig",
        "QMixerNetworkConfig", "SharedMemWeightSyncSchemeConfig", "VDNMixerNetworkConfig",
        "VanillaWeightUpdaterConfig"
    ),
    "tdrl.trainers.algorithms.configs.objectives_offline": (
        "CQLLossConfig", "IQLLossConfig"
    ),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "DreamerV3DiscreteActorConfig", "DreamerV3ImageDecoderConfig", "DreamerV3ImageEncoderConfig",
    "DreamerV3LossConfig", "DreamerV3MLPConfig", "DreamerV3OptimizationStepperConfig", "DreamerV3OptimizerConfig",
    "DreamerV3SeededPolicyConfig", "DreamerV3UpdateRatioConfig", "RSSMStateEstimatorV3Config",
    "A2CLossConfig", "A2CTrainerConfig", "ASGDConfig", "ActionDiscretizerConfig", "ActionMaskConfig",
    "ActionScalingConfig", "ActivationConfig", "AdadeltaConfig", "AdagradConfig", "AdamConfig", "AdamWConfig",
    "AdamaxConfig", "AdditiveGaussianModuleConfig", "AggregatorConfig", "AsyncCollectorConfig",
    "AutoResetTransformConfig", "BaseCollectorConfig", "BatchSizeTransformConfig", "BatchSubSamplerConfig",
    "BatchedEnvConfig", "BinarizeRewardConfig", "BurnInTransformConfig", "CQLLossConfig", "CQLTrainerConfig",
    "CSVLoggerConfig", "CatFramesConfig", "CatTensorsConfig", "CategoricalModelConfig", "CenterCropConfig",
    "ClearCudaCacheConfig", "ClipTransformConfig", "CollectorConfig", "ComposeConfig",
    "ConditionalPolicySwitchConfig", "ConditionalSkipConfig", "ConfigBase", "ConfigError", "ConfigValidationError",
    "ConvNetConfig", "CosineAnnealingLRConfig", "CountFramesLogConfig", "CropConfig", "DDPGLossConfig",
    "DDPGTrainerConfig", "DMControlEnvConfig", "DQNLossConfig", "DQNTrainerConfig", "DTypeCastTransformConfig",
    "DeviceCastTransformConfig", "DiscreteActionProjectionConfig", "DoubleToFloatConfig", "EarlyStoppingConfig",
    "EndOfLifeTransformConfig", "EnvConfig", "EnvLibsConfig", "ExcludeTransformConfig", "ExpandAsConfig",
    "ExponentialLRConfig", "FiniteTensorDictCheckConfig", "FlattenActionConfig", "FlattenObservationConfig",
    "FrameSkipTransformConfig", "GAEConfig", "GrayScaleConfig", "GymEnvConfig", "HardUpdateConfig", "HashConfig",
    "HookConfig", "IQLLossConfig", "IQLTrainerConfig", "InitTrackerConfig", "LBFGSConfig", "LRSchedulerConfig",
    "LayerConfig", "LazyMemmapStorageConfig", "LazyStackStorageConfig", "LazyTensorStorageConfig", "LinearLRConfig",
    "LineariseRewardsConfig", "ListStorageConfig", "LogScalarConfig", "LogTimingConfig", "LoggerConfig",
    "LossConfig", "MLPConfig", "MOGymEnvConfig", "MultiThreadedEnvConfig", "PettingZooEnvConfig",
    "VmasEnvConfig", "MeanActionSelectorConfig", "ModelConfig", "ModuleTransformConfig",
    "MultiActionConfig", "MultiAsyncCollectorConfig", "MultiProcessWeightSyncSchemeConfig",
    "MultiProcessedWeightUpdaterConfig", "MultiStepTransformConfig", "MultiSyncCollectorConfig", "NAdamConfig",
    "NetworkConfig", "NextObservationDeltaConfig", "NextStateReconstructorConfig", "NoWeightSyncSchemeConfig",
    "NoopResetEnvConfig", "NormConfig", "ObservationNormConfig", "OffPolicyTrainerConfig", "OnPolicyTrainerConfig",
    "OptimizerConfig", "PPOLossConfig", "PPOTrainerConfig", "PermuteTransformConfig", "PinMemoryTransformConfig",
    "PrioritizedSamplerConfig", "QMixerNetworkConfig", "QValueModelConfig", "RAdamConfig", "REGISTRY",
    "RMSpropConfig", "RandomCropTensorDictConfig", "RandomSamplerConfig", "ReinforceLossConfig",
    "ReinforceTrainerConfig", "RemoveEmptySpecsConfig", "RenameTransformConfig", "ReplayBufferBaseConfig",
    "ReplayBufferConfig", "ResizeConfig", "Reward2GoTransformConfig", "RewardClippingConfig",
    "RewardNormalizerConfig", "RewardScalingConfig", "RewardSumConfig", "RoundRobinWriterConfig", "RpropConfig",
    "RunConfig", "SACLossConfig", "SACTrainerConfig", "SGDConfig", "SamplerConfig",
    "SamplerWithoutReplacementConfig", "SelectKeysConfig", "SelectTransformConfig",
    "SharedMemWeightSyncSchemeConfig", "SignTransformConfig", "SliceSamplerConfig",
    "SliceSamplerWithoutReplacementConfig", "SoftUpdateConfig", "SparseAdamConfig", "SqueezeTransformConfig",
    "StackConfig", "StepCounterConfig", "StepLRConfig", "StorageConfig", "StorageEnsembleConfig",
    "SuccessRewardConfig", "TD3LossConfig", "TD3TrainerConfig", "TQCLossConfig", "TanhModuleConfig",
    "TanhNormalModelConfig", "TargetNetUpdaterConfig", "TargetReturnConfig", "TensorDictModuleConfig",
    "TensorDictPrimerConfig", "TensorDictReplayBufferConfig", "TensorDictSequentialConfig", "TensorStorageConfig",
    "TensorboardLoggerConfig", "TerminateTransformConfig", "TimeMaxPoolConfig", "TimerConfig",
    "ToTensorImageConfig", "TokenizerConfig", "TrainerConfig", "TrajCounterConfig", "TransformConfig",
    "TransformedEnvConfig", "UnaryTransformConfig", "UnsqueezeTransformConfig", "VDNMixerNetworkConfig",
    "ValueModelConfig", "VanillaWeightUpdaterConfig", "VecGymEnvTransformConfig", "VecNormConfig",
    "VecNormV2Config", "WandbLoggerConfig", "WeightSyncSchemeConfig", "WeightUpdaterConfig", "WriterConfig",
    "compose_config", "compose_run_config", "describe", "infer_sizes", "list_presets", "loss_fields",
    "register_configs", "run_config", "signature_of", "validate_config", "validate_run_config",
]



def _register() -> None:
    importlib.import_module("tdrl.trainers.algorithms.configs._register")  # registers on import


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, on_first_use=_register)
