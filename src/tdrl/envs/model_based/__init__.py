"""Model-based environments: ``ModelBasedEnvBase``, ``DreamerEnv`` (+ ``DreamerDecoder``), ``ImaginedEnv``,
``WorldModelEnv``."""

from tdrl.envs.model_based.common import ModelBasedEnvBase
from tdrl.envs.model_based.dreamer import DreamerDecoder, DreamerEnv

__all__ = [
    "DreamerDecoder",
    "DreamerEnv",
    "ModelBasedEnvBase",
]
