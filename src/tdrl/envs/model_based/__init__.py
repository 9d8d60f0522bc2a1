"""Model-based environments: ``ModelBasedEnvBase``, ``DreamerEnv`` (+ ``DreamerDecoder``), ``ImaginedEnv``,
``WorldModelEnv``."""

from tdrl.envs.model_based.common import ModelBasedEnvBase
from tdrl.envs.model_based.dreamer import DreamerDecoder, DreamerEnv
from tdrl.envs.model_based.imagined import ImaginedEnv
from tdrl.envs.model_based.world_model_env import WorldModelEnv

__all__ = [
    "DreamerDecoder",
    "DreamerEnv",
    "ImaginedEnv",
    "ModelBasedEnvBase",
    "WorldModelEnv",
]
