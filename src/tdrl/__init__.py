"""tdrl: a fast, TensorDict-native reinforcement-learning library with TorchRL's public API.

Subpackages (``tdrl.data``, ``tdrl.envs``, ``tdrl.modules``, ``tdrl.objectives``, ``tdrl.collectors``,
``tdrl.record``, ``tdrl.trainers``) are imported on first use so that ``import tdrl`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from tdrl._utils import (
    auto_unwrap_transformed_env,
    compile_with_warmup,
    implement_for,
    logger,
    set_auto_unwrap_transformed_env,
    timeit,
)

# TorchRL programs spell the package logger ``torchrl_logger``; the import swap leaves that name untouched.
torchrl_logger = tdrl_logger = logger

__version__ = "0.1.0"

_SUBPACKAGES = ("checkpoint", "data", "envs", "modules", "objectives", "collectors", "weight_update", "record", "trainers")
# Top-level functions that live in a subpackage, imported on first use like the subpackages.
_LAZY = {"load_policy": "tdrl.trainers.policy"}

__all__ = [
    "__version__",
    "auto_unwrap_transformed_env",
    "compile_with_warmup",
    "implement_for",
    "load_policy",
    "logger",
    "set_auto_unwrap_transformed_env",
    "tdrl_logger",
    "timeit",
    "torchrl_logger",
    *_SUBPACKAGES,
]


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"tdrl.{name}")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tdrl' has no attribute {name!r}")
