"""Hydra structured configs for tdrl, registered under TorchRL's group and config names on import."""

from tdrl.trainers.algorithms.configs._register import REGISTRY, register_configs
from tdrl.trainers.algorithms.configs.collectors import (
    AsyncCollectorConfig,
    BaseCollectorConfig,
    CollectorConfig,
    MultiAsyncCollectorConfig,
    MultiSyncCollectorConfig,
)
from tdrl.trainers.algorithms.configs.common import ConfigBase
from tdrl.trainers.algorithms.configs.data import (
    LazyMemmapStorageConfig,
    LazyTensorStorageConfig,
    ListStorageConfig,
    PrioritizedSamplerConfig,
    RandomSamplerConfig,
    ReplayBufferConfig,
    RoundRobinWriterConfig,
    SamplerWithoutReplacementConfig,
    SliceSamplerConfig,
    SliceSamplerWithoutReplacementConfig,
    TensorDictReplayBufferConfig,
)
from tdrl.trainers.algorithms.configs.envs import BatchedEnvConfig, EnvConfig, TransformedEnvConfig
from tdrl.trainers.algorithms.configs.envs_libs import DMControlEnvConfig, EnvLibsConfig, GymEnvConfig
from tdrl.trainers.algorithms.configs.hooks import EarlyStoppingConfig, HookConfig, LogScalarConfig
from tdrl.trainers.algorithms.configs.instantiate import compose_config, infer_sizes, run_config
from tdrl.trainers.algorithms.configs.logging import (
    CSVLoggerConfig,
    LoggerConfig,
    TensorboardLoggerConfig,
    WandbLoggerConfig,
)
from tdrl.trainers.algorithms.configs.modules import (
    CategoricalModelConfig,
    ConvNetConfig,
    MLPConfig,
    ModelConfig,
    QValueModelConfig,
    TanhNormalModelConfig,
    TensorDictModuleConfig,
    ValueModelConfig,
)
from tdrl.trainers.algorithms.configs.objectives import (
    A2CLossConfig,
    DDPGLossConfig,
    DQNLossConfig,
    GAEConfig,
    HardUpdateConfig,
    LossConfig,
    PPOLossConfig,
    ReinforceLossConfig,
    SACLossConfig,
    SoftUpdateConfig,
    TD3LossConfig,
)
from tdrl.trainers.algorithms.configs.presets import (
    ConfigError,
    compose_run_config,
    describe,
    list_presets,
    loss_fields,
    validate_run_config,
)
from tdrl.trainers.algorithms.configs.run import RunConfig
from tdrl.trainers.algorithms.configs.trainers import (
    A2CTrainerConfig,
    DDPGTrainerConfig,
    DQNTrainerConfig,
    OnPolicyTrainerConfig,
    PPOTrainerConfig,
    ReinforceTrainerConfig,
    SACTrainerConfig,
    TD3TrainerConfig,
    TrainerConfig,
)
from tdrl.trainers.algorithms.configs.transforms import (
    ActionDiscretizerConfig,
    ComposeConfig,
    DiscreteActionProjectionConfig,
    DoubleToFloatConfig,
    MultiStepTransformConfig,
    NoopResetEnvConfig,
    RewardSumConfig,
    StepCounterConfig,
    TargetReturnConfig,
    TransformConfig,
    UnaryTransformConfig,
    VecNormV2Config,
)
from tdrl.trainers.algorithms.configs.utils import (
    AdamConfig,
    AdamWConfig,
    RMSpropConfig,
    SGDConfig,
)
from tdrl.trainers.algorithms.configs.validation import ConfigValidationError, signature_of, validate_config

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
