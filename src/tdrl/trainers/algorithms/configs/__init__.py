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
    "tdrl.trainers.algorithms.configs._register": ("REGISTRY", "register_configs"),
    "tdrl.trainers.algorithms.configs.collectors": (
        "AsyncCollectorConfig", "BaseCollectorConfig", "CollectorConfig", "MultiAsyncCollectorConfig",
        "MultiSyncCollectorConfig"
    ),
    "tdrl.trainers.algorithms.configs.common": ("ConfigBase",),
    "tdrl.trainers.algorithms.configs.data": (
        "LazyMemmapStorageConfig", "LazyTensorStorageConfig", "ListStorageConfig", "PrioritizedSamplerConfig",
        "RandomSamplerConfig", "ReplayBufferConfig", "RoundRobinWriterConfig", "SamplerWithoutReplacementConfig",
        "SliceSamplerConfig", "SliceSamplerWithoutReplacementConfig", "TensorDictReplayBufferConfig"
    ),
    "tdrl.trainers.algorithms.configs.envs": ("BatchedEnvConfig", "EnvConfig", "TransformedEnvConfig"),
    "tdrl.trainers.algorithms.configs.envs_libs": ("DMControlEnvConfig", "EnvLibsConfig", "GymEnvConfig"),
    "tdrl.trainers.algorithms.configs.hooks": ("EarlyStoppingConfig", "HookConfig", "LogScalarConfig"),
    "tdrl.trainers.algorithms.configs.instantiate": ("compose_config", "infer_sizes", "run_config"),
    "tdrl.trainers.algorithms.configs.logging": (
        "CSVLoggerConfig", "LoggerConfig", "TensorboardLoggerConfig", "WandbLoggerConfig"
    ),
    "tdrl.trainers.algorithms.configs.modules": (
        "CategoricalModelConfig", "ConvNetConfig", "MLPConfig", "ModelConfig", "QValueModelConfig",
        "TanhNormalModelConfig", "TensorDictModuleConfig", "ValueModelConfig"
    ),
    "tdrl.trainers.algorithms.configs.objectives": (
        "A2CLossConfig", "DDPGLossConfig", "DQNLossConfig", "GAEConfig", "HardUpdateConfig", "LossConfig",
        "PPOLossConfig", "ReinforceLossConfig", "SACLossConfig", "SoftUpdateConfig", "TD3LossConfig"
    ),
    "tdrl.trainers.algorithms.configs.presets": (
        "ConfigError", "compose_run_config", "describe", "list_presets", "loss_fields", "validate_run_config"
    ),
    "tdrl.trainers.algorithms.configs.run": ("RunConfig",),
    "tdrl.trainers.algorithms.configs.trainers": (
        "A2CTrainerConfig", "DDPGTrainerConfig", "DQNTrainerConfig", "OnPolicyTrainerConfig", "PPOTrainerConfig",
        "ReinforceTrainerConfig", "SACTrainerConfig", "TD3TrainerConfig", "TrainerConfig"
    ),
    "tdrl.trainers.algorithms.configs.transforms": (
        "ActionDiscretizerConfig", "ComposeConfig", "DiscreteActionProjectionConfig", "DoubleToFloatConfig",
        "MultiStepTransformConfig", "NoopResetEnvConfig", "RewardSumConfig", "StepCounterConfig",
        "TargetReturnConfig", "TransformConfig", "UnaryTransformConfig", "VecNormV2Config"
    ),
    "tdrl.trainers.algorithms.configs.utils": ("AdamConfig", "AdamWConfig", "RMSpropConfig", "SGDConfig"),
    "tdrl.trainers.algorithms.configs.validation": ("ConfigValidationError", "signature_of", "validate_config"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "REGISTRY", "ConfigError", "RunConfig", "compose_run_config", "describe", "list_presets", "loss_fields",
    "validate_run_config", "ActionDiscretizerConfig", "DiscreteActionProjectionConfig", "MultiStepTransformConfig",
    "TargetReturnConfig", "UnaryTransformConfig", "VecNormV2Config", "A2CLossConfig", "A2CTrainerConfig", "AdamConfig", "AdamWConfig", "AsyncCollectorConfig",
    "BaseCollectorConfig", "BatchedEnvConfig", "CSVLoggerConfig", "CategoricalModelConfig", "CollectorConfig",
    "ComposeConfig", "ConfigBase", "ConfigValidationError", "ConvNetConfig", "DDPGLossConfig",
    "DDPGTrainerConfig", "DMControlEnvConfig", "DQNLossConfig", "DQNTrainerConfig", "DoubleToFloatConfig",
    "EarlyStoppingConfig", "EnvConfig", "EnvLibsConfig", "GAEConfig", "GymEnvConfig", "HardUpdateConfig", "HookConfig", "LazyMemmapStorageConfig",
    "LazyTensorStorageConfig", "ListStorageConfig", "LogScalarConfig", "LoggerConfig", "LossConfig", "MLPConfig", "ModelConfig",
    "MultiAsyncCollectorConfig", "MultiSyncCollectorConfig", "NoopResetEnvConfig", "OnPolicyTrainerConfig",
    "PPOLossConfig", "PPOTrainerConfig", "PrioritizedSamplerConfig", "QValueModelConfig", "RMSpropConfig",
    "RandomSamplerConfig", "ReinforceLossConfig", "ReinforceTrainerConfig", "ReplayBufferConfig",
    "RewardSumConfig", "RoundRobinWriterConfig", "SACLossConfig", "SACTrainerConfig", "SGDConfig",
    "SamplerWithoutReplacementConfig", "SliceSamplerConfig", "SliceSamplerWithoutReplacementConfig",
    "SoftUpdateConfig", "StepCounterConfig", "TD3LossConfig", "TD3TrainerConfig", "TanhNormalModelConfig",
    "TensorDictModuleConfig", "TensorDictReplayBufferConfig", "TensorboardLoggerConfig", "TrainerConfig",
    "TransformConfig", "TransformedEnvConfig", "ValueModelConfig", "WandbLoggerConfig", "compose_config",
    "infer_sizes", "register_configs", "run_config", "signature_of", "validate_config",
]



def _register() -> None:
    importlib.import_module("tdrl.trainers.algorithms.configs._register")  # registers on import


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, on_first_use=_register)
