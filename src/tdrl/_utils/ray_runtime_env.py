"""Ray ``runtime_env`` defaults: keep the working-dir upload small (TorchRL's helpers, same contents)."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["get_ray_default_runtime_env", "merge_ray_runtime_env"]

# Ray uploads the working directory to every worker (512 MB cap by default): virtual envs, tests, docs,
# caches and build products do not belong there.
_EXCLUDES = (
    ".venv/", "venv/", "env/", "ENV/", "env.bak/", "venv.bak/", "test/", "tests/", "docs/", "benchmarks/",
    "tutorials/", "examples/", ".github/", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", "__pycache__/",
    "*.pyc", "*.pyo", "*.egg-info/", ".idea/", ".vscode/", "dev/", "main/", "*.html",
)
# Forwarded to the workers when set here and not already given (as TorchRL does).
_FORWARDED_ENV_VARS = ("WANDB_API_KEY", "HF_TOKEN", "HF_HOME", "TORCHRL_PROFILING")


def get_ray_default_runtime_env() -> dict[str, Any]:
    """The default ``runtime_env``: ``{"excludes": [...]}`` of directories and files not to upload.

    Examples:
        >>> env = get_ray_default_runtime_env()
        >>> ".venv/" in env["excludes"] and "tests/" in env["excludes"]
        True
    """
    return {"excludes": list(_EXCLUDES)}


def merge_ray_runtime_env(ray_init_config: dict[str, Any]) -> dict[str, Any]:
    """Adds the default excludes to ``ray_init_config["runtime_env"]`` (in place) and returns the config.

    The user's excludes and env vars are kept; ``WANDB_API_KEY``, ``HF_TOKEN``, ``HF_HOME`` and
    ``TORCHRL_PROFILING`` are forwarded to the workers when set in this process and not given.

    Args:
        ray_init_config: keyword arguments for ``ray.init``.

    Examples:
        >>> config = merge_ray_runtime_env({"num_cpus": 2, "runtime_env": {"excludes": ["data/"]}})
        >>> "data/" in config["runtime_env"]["excludes"], ".venv/" in config["runtime_env"]["excludes"]
        (True, True)
    """
    if not isinstance(ray_init_config, dict):
        raise TypeError(f"ray_init_config must be a dict of ray.init arguments, got {type(ray_init_config).__name__}")
    runtime_env = dict(ray_init_config.get("runtime_env") or {})
    excludes = list(runtime_env.get("excludes") or [])
    runtime_env["excludes"] = list(dict.fromkeys([*_EXCLUDES, *excludes]))  # deduplicated, order kept
    env_vars = dict(runtime_env.get("env_vars") or {})
    for key in _FORWARDED_ENV_VARS:
        value = os.environ.get(key)
        if value and key not in env_vars:
            env_vars[key] = value
    runtime_env["env_vars"] = env_vars
    ray_init_config["runtime_env"] = runtime_env
    return ray_init_config
