"""Access to Ray (the ``distributed`` extra) for the Ray integrations of each layer.

``import ray`` costs about a second, so the integration modules re-exported by ``tdrl.data`` and
``tdrl.collectors`` load it on first use through :func:`require_ray` instead of at import time.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["RayLease", "ray_available", "require_ray"]


def ray_available() -> bool:
    """Whether Ray is installed (nothing is imported).

    Examples:
        >>> isinstance(ray_available(), bool)
        True
    """
    return importlib.util.find_spec("ray") is not None


def require_ray(feature: str) -> ModuleType:
    """The ``ray`` module, or an ImportError naming ``feature`` and the extra that installs Ray.

    Args:
        feature: what needs Ray (the class name), for the error message.

    Examples:
        >>> require_ray("RayReplayBuffer").__name__ if ray_available() else "ray"
        'ray'
    """
    try:
        return importlib.import_module("ray")
    except ImportError as err:
        raise ImportError(
            f"{feature} needs Ray: install the distributed extra, pip install 'tdrl[distributed]'"
        ) from err


class RayLease:
    """A hold on the Ray runtime: starts Ray when nothing has, and shuts it down when the last tdrl hold that
    started it is released (a replay buffer and a collector may share one local Ray instance).

    Args:
        feature: what needs Ray (for the ImportError).
        init_config: keyword arguments of ``ray.init`` when Ray is not initialised yet.

    Examples:
        >>> RayLease.__name__  # starting Ray takes seconds: see docs/distributed.md
        'RayLease'
    """

    _holders = 0  # leases alive on a Ray instance that tdrl started
    _started = False

    def __init__(self, feature: str, init_config: dict | None = None) -> None:
        self.ray = require_ray(feature)
        if not self.ray.is_initialized():
            self.ray.init(**dict(init_config or {}))
            RayLease._started, RayLease._holders = True, 0
        RayLease._holders += 1
        self.held = True

    @staticmethod
    def module() -> ModuleType:
        """The ``ray`` module (for code that runs where a lease or an actor already made Ray available)."""
        return require_ray("tdrl's Ray integration")

    def release(self) -> None:
        """Drops this hold (idempotent); the last one shuts down a Ray instance tdrl started."""
        if not self.held:
            return
        self.held = False
        RayLease._holders -= 1
        if RayLease._holders <= 0 and RayLease._started and self.ray.is_initialized():
            RayLease._started = False
            self.ray.shutdown()
