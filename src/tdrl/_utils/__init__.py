"""Layer 0: logging, timing, seeding and small helpers."""

from tdrl._utils.auto_unwrap import auto_unwrap_transformed_env, set_auto_unwrap_transformed_env
from tdrl._utils.cuda_memory import cuda_memory_profile, cuda_memory_stats, reset_cuda_peak_stats
from tdrl._utils.implement_for import implement_for
from tdrl._utils.logging import logger
from tdrl._utils.seeding import seed_generator, set_global_seed
from tdrl._utils.timeit import timeit
from tdrl._utils.torch_utils import compile_with_warmup, get_available_device
from tdrl._utils.warnings import TDRLWarning

__all__ = [
    "TDRLWarning",
    "auto_unwrap_transformed_env",
    "compile_with_warmup",
    "cuda_memory_profile",
    "cuda_memory_stats",
    "get_available_device",
    "implement_for",
    "logger",
    "reset_cuda_peak_stats",
    "seed_generator",
    "set_auto_unwrap_transformed_env",
    "set_global_seed",
    "timeit",
]
