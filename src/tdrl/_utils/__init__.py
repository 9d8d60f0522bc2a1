"""Layer 0: logging, timing, seeding and small helpers."""

from tdrl._utils.logging import logger
from tdrl._utils.seeding import seed_generator, set_global_seed
from tdrl._utils.timeit import timeit
from tdrl._utils.warnings import TDRLWarning

__all__ = ["TDRLWarning", "logger", "seed_generator", "set_global_seed", "timeit"]
