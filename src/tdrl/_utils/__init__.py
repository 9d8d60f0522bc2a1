"""Layer 0: logging, timing, seeding and small helpers."""

from tdrl._utils.auto_unwrap import auto_unwrap_transformed_env, set_auto_unwrap_transformed_env
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
    "get_available_device",
    "implement_for",
    "logger",
    "seed_generator",
    "set_auto_unwrap_transformed_env",
    "set_global_seed",
    "timeit",
]
