"""tdrl: a fast, TensorDict-native reinforcement-learning library with TorchRL's public API.

Subpackages (``tdrl.data``, ``tdrl.envs``, ``tdrl.modules``, ``tdrl.objectives``, ``tdrl.collectors``,
``tdrl.record``, ``tdrl.trainers``) are imported on first use so that ``import tdrl`` stays cheap.
"""

from __future__ import annotations

from tdrl.lazy import lazy_exports

__version__ = "0.1.0"

_SUBPACKAGES = ("checkpoint", "data", "envs", "modules", "objectives", "collectors", "weight_update", "record", "trainers")
# Names from tdrl._utils (which imports torch) resolve on first access: `tdrl --help` must not load torch.
# TorchRL programs spell the package logger ``torchrl_logger``; the import swap leaves that name untouched.
_UTILS = ("auto_unwrap_transformed_env", "compile_with_warmup", "cuda_memory_profile", "cuda_memory_stats",
          "implement_for", "logger", "reset_cuda_peak_stats", "set_auto_unwrap_transformed_env", "timeit")
_EXPORTS = {**{name: f"tdrl.{name}" for name in _SUBPACKAGES}, **{name: "tdrl._utils" for name in _UTILS},
            "tdrl_logger": "tdrl._utils:logger", "torchrl_logger": "tdrl._utils:logger",
            "load_policy": "tdrl.trainers.policy",
            "get_ray_default_runtime_env": "tdrl._utils.ray_runtime_env",
            "merge_ray_runtime_env": "tdrl._utils.ray_runtime_env"}

__all__ = [
    "__version__",
    "auto_unwrap_transformed_env",
    "compile_with_warmup",
    "cuda_memory_profile",
    "cuda_memory_stats",
    "get_ray_default_runtime_env",
    "implement_for",
    "load_policy",
    "logger",
    "merge_ray_runtime_env",
    "reset_cuda_peak_stats",
    "set_auto_unwrap_transformed_env",
    "tdrl_logger",
    "timeit",
    "torchrl_logger",
    *_SUBPACKAGES,
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
