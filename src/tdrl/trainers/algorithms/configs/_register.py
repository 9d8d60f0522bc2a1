"""Registers every config in Hydra's ConfigStore under TorchRL's group and config names (runs on import)."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from tdrl.trainers.algorithms.configs import (
    collectors,
    data,
    dreamer_v3,
    envs,
    envs_libs,
    envs_libs_extra,
    hooks,
    llm,
    logging,
    module_wrappers,
    modules,
    objectives,
    objectives_offline,
    objectives_tqc,
    ray,
    trainers,
    transforms,
    transforms_extra,
    transforms_more,
    utils,
    weight_update,
)

__all__ = ["REGISTRY", "register_configs"]

_TRANSFORMS_EXTRA = {
    "binarize_reward": "BinarizeRewardConfig", "center_crop": "CenterCropConfig", "crop": "CropConfig",
    "dtype_cast": "DTypeCastTransformConfig", "linearise_rewards": "LineariseRewardsConfig",
    "permute": "PermuteTransformConfig", "random_crop_tensordict": "RandomCropTensorDictConfig",
    "remove_empty_specs": "RemoveEmptySpecsConfig", "reward2go": "Reward2GoTransformConfig",
    "sign": "SignTransformConfig", "tensordict_primer": "TensorDictPrimerConfig",
    "time_max_pool": "TimeMaxPoolConfig", "timer": "TimerConfig", "tokenizer": "TokenizerConfig",
    "traj_counter": "TrajCounterConfig",
}

_TRANSFORMS_MORE = {
    "auto_reset": "AutoResetTransformConfig", "batch_size": "BatchSizeTransformConfig", "stack": "StackConfig",
    "pin_memory": "PinMemoryTransformConfig", "finite_tensordict_check": "FiniteTensorDictCheckConfig",
    "vec_gym_env": "VecGymEnvTransformConfig", "burn_in": "BurnInTransformConfig",
    "conditional_skip": "ConditionalSkipConfig", "conditional_policy_switch": "ConditionalPolicySwitchConfig",
    "multi_action": "MultiActionConfig", "end_of_life": "EndOfLifeTransformConfig", "hash": "HashConfig",
    "module": "ModuleTransformConfig", "expand_as": "ExpandAsConfig",
    "next_observation_delta": "NextObservationDeltaConfig", "next_state_reconstructor": "NextStateReconstructorConfig",
    "terminate": "TerminateTransformConfig", "success_reward": "SuccessRewardConfig",
    "action_scaling": "ActionScalingConfig", "flatten_action": "FlattenActionConfig",
    "mean_action_selector": "MeanActionSelectorConfig",
}

# group -> {name: config class}; names follow TorchRL's ConfigStore registrations.
REGISTRY: dict[str, dict[str, type]] = {
    "env": {
        "gym": envs_libs.GymEnvConfig, "dm_control": envs_libs.DMControlEnvConfig,
        "batched_env": envs.BatchedEnvConfig, "transformed_env": envs.TransformedEnvConfig,
        "mo_gym": envs_libs_extra.MOGymEnvConfig, "multi_threaded": envs_libs_extra.MultiThreadedEnvConfig,
        "pettingzoo": envs_libs_extra.PettingZooEnvConfig, "vmas": envs_libs_extra.VmasEnvConfig,
    },
    "network": {
        "mlp": modules.MLPConfig, "convnet": modules.ConvNetConfig,
        "tensordict_module": modules.TensorDictModuleConfig,
        "tensordict_sequential": module_wrappers.TensorDictSequentialConfig,
        "qmixer": weight_update.QMixerNetworkConfig, "vdn_mixer": weight_update.VDNMixerNetworkConfig,
        "dreamer_v3_mlp": dreamer_v3.DreamerV3MLPConfig,
        "dreamer_v3_seeded_policy": dreamer_v3.DreamerV3SeededPolicyConfig,
        "dreamer_v3_discrete_actor": dreamer_v3.DreamerV3DiscreteActorConfig,
        "rssm_state_estimator_v3": dreamer_v3.RSSMStateEstimatorV3Config,
        "dreamer_v3_image_encoder": dreamer_v3.DreamerV3ImageEncoderConfig,
        "dreamer_v3_image_decoder": dreamer_v3.DreamerV3ImageDecoderConfig,
    },
    "model": {
        "tanh_normal": modules.TanhNormalModelConfig, "value": modules.ValueModelConfig,
        "qvalue": modules.QValueModelConfig, "categorical": modules.CategoricalModelConfig,
        "tanh_module": module_wrappers.TanhModuleConfig,
    },
    "exploration": {"additive_gaussian": module_wrappers.AdditiveGaussianModuleConfig},
    "transform": {
        "noop_reset": transforms.NoopResetEnvConfig, "step_counter": transforms.StepCounterConfig,
        "compose": transforms.ComposeConfig, "double_to_float": transforms.DoubleToFloatConfig,
        "to_tensor_image": transforms.ToTensorImageConfig, "clip": transforms.ClipTransformConfig,
        "resize": transforms.ResizeConfig, "flatten_observation": transforms.FlattenObservationConfig,
        "gray_scale": transforms.GrayScaleConfig, "observation_norm": transforms.ObservationNormConfig,
        "cat_frames": transforms.CatFramesConfig, "reward_clipping": transforms.RewardClippingConfig,
        "reward_scaling": transforms.RewardScalingConfig, "vec_norm": transforms.VecNormConfig,
        "frame_skip": transforms.FrameSkipTransformConfig, "device_cast": transforms.DeviceCastTransformConfig,
        "unsqueeze": transforms.UnsqueezeTransformConfig, "squeeze": transforms.SqueezeTransformConfig,
        "cat_tensors": transforms.CatTensorsConfig, "reward_sum": transforms.RewardSumConfig,
        "exclude": transforms.ExcludeTransformConfig, "select": transforms.SelectTransformConfig,
        "init_tracker": transforms.InitTrackerConfig, "rename": transforms.RenameTransformConfig,
        "action_mask": transforms.ActionMaskConfig, "vec_norm_v2": transforms.VecNormV2Config,
        "action_discretizer": transforms.ActionDiscretizerConfig,
        "discrete_action_projection": transforms.DiscreteActionProjectionConfig,
        "multi_step": transforms.MultiStepTransformConfig, "target_return": transforms.TargetReturnConfig,
        "unary": transforms.UnaryTransformConfig,
        **{name: getattr(transforms_extra, cls) for name, cls in _TRANSFORMS_EXTRA.items()},
        **{name: getattr(transforms_more, cls) for name, cls in _TRANSFORMS_MORE.items()},
    },
    "loss": {
        "ppo": objectives.PPOLossConfig, "a2c": objectives.A2CLossConfig, "reinforce": objectives.ReinforceLossConfig,
        "sac": objectives.SACLossConfig, "dqn": objectives.DQNLossConfig, "ddpg": objectives.DDPGLossConfig,
        "td3": objectives.TD3LossConfig, "cql": objectives_offline.CQLLossConfig,
        "dreamer_v3": dreamer_v3.DreamerV3LossConfig,
        "iql": objectives_offline.IQLLossConfig, "tqc": objectives_tqc.TQCLossConfig,
    },
    "value": {"gae": objectives.GAEConfig},
    "target_net_updater": {"soft": objectives.SoftUpdateConfig, "hard": objectives.HardUpdateConfig},
    "replay_buffer": {"base": data.ReplayBufferConfig, "tensordict": data.TensorDictReplayBufferConfig},
    "storage": {
        "list": data.ListStorageConfig, "lazy_tensor": data.LazyTensorStorageConfig,
        "lazy_memmap": data.LazyMemmapStorageConfig, "tensor": data.TensorStorageConfig,
        "lazy_stack": data.LazyStackStorageConfig,
    },
    "sampler": {
        "random": data.RandomSamplerConfig, "without_replacement": data.SamplerWithoutReplacementConfig,
        "prioritized": data.PrioritizedSamplerConfig, "slice": data.SliceSamplerConfig,
        "slice_without_replacement": data.SliceSamplerWithoutReplacementConfig,
    },
    "writer": {"round_robin": data.RoundRobinWriterConfig},
    "collector": {
        "sync": collectors.CollectorConfig, "async": collectors.AsyncCollectorConfig,
        "multi_sync": collectors.MultiSyncCollectorConfig, "multi_async": collectors.MultiAsyncCollectorConfig,
        "ray": ray.RayCollectorConfig,
    },
    "trainer": {
        "ppo": trainers.PPOTrainerConfig, "a2c": trainers.A2CTrainerConfig,
        "reinforce": trainers.ReinforceTrainerConfig, "sac": trainers.SACTrainerConfig,
        "dqn": trainers.DQNTrainerConfig, "ddpg": trainers.DDPGTrainerConfig, "td3": trainers.TD3TrainerConfig,
        "cql": trainers.CQLTrainerConfig, "iql": trainers.IQLTrainerConfig,
        "grpo_sums": llm.GRPOTrainerConfig,  # the built-in task (TorchRL's trainer/grpo takes the parts: missing)
    },
    "optimizer": {
        "dreamer_v3": dreamer_v3.DreamerV3OptimizerConfig,
        "adam": utils.AdamConfig, "adamw": utils.AdamWConfig, "adamax": utils.AdamaxConfig, "sgd": utils.SGDConfig,
        "rmsprop": utils.RMSpropConfig, "adagrad": utils.AdagradConfig, "radam": utils.RAdamConfig,
        "nadam": utils.NAdamConfig, "adadelta": utils.AdadeltaConfig, "asgd": utils.ASGDConfig,
        "lbfgs": utils.LBFGSConfig, "rprop": utils.RpropConfig, "sparse_adam": utils.SparseAdamConfig,
    },
    "weight_sync_scheme": {
        "shared_mem": weight_update.SharedMemWeightSyncSchemeConfig,
        "multiprocess": weight_update.MultiProcessWeightSyncSchemeConfig,
        "no_sync": weight_update.NoWeightSyncSchemeConfig, "ray": ray.RayWeightSyncSchemeConfig,
    },
    "weight_updater": {
        "vanilla": weight_update.VanillaWeightUpdaterConfig,
        "multiprocessed": weight_update.MultiProcessedWeightUpdaterConfig, "ray": ray.RayWeightUpdaterConfig,
    },
    "lr_scheduler": {
        "step": utils.StepLRConfig, "exponential": utils.ExponentialLRConfig,
        "cosine_annealing": utils.CosineAnnealingLRConfig, "linear": utils.LinearLRConfig,
    },
    "hook": {
        "dreamer_v3_optimization": dreamer_v3.DreamerV3OptimizationStepperConfig,
        "batch_subsampler": hooks.BatchSubSamplerConfig, "clear_cuda_cache": hooks.ClearCudaCacheConfig,
        "count_frames_log": hooks.CountFramesLogConfig, "early_stopping": hooks.EarlyStoppingConfig,
        "log_scalar": hooks.LogScalarConfig, "log_timing": hooks.LogTimingConfig,
        "reward_normalizer": hooks.RewardNormalizerConfig, "select_keys": hooks.SelectKeysConfig,
    },
    "logger": {
        "csv": logging.CSVLoggerConfig, "tensorboard": logging.TensorboardLoggerConfig,
        "wandb": logging.WandbLoggerConfig,
    },
}


def register_configs() -> None:
    """Stores every config of :data:`REGISTRY` in Hydra's ``ConfigStore`` (idempotent).

    Examples:
        >>> from hydra.core.config_store import ConfigStore
        >>> register_configs()
        >>> "ppo.yaml" in ConfigStore.instance().list("trainer")
        True
    """
    store = ConfigStore.instance()
    for group, configs in REGISTRY.items():
        for name, node in configs.items():
            store.store(group=group, name=name, node=node)


register_configs()
