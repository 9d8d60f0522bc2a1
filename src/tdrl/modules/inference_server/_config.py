"""``InferenceServerConfig`` and ``InferenceDeviceConfig``: the inference server's settings, grouped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

__all__ = ["InferenceDeviceConfig", "InferenceServerConfig"]


def _as_device(device: torch.device | str | int | None) -> torch.device | None:
    return None if device is None else torch.device(device)


@dataclass
class InferenceDeviceConfig:
    """Where the served policy runs and where its answers and the collected data go.

    Args:
        policy_device: device of the policy; batches are moved there before the forward.
        output_device: device the answers are moved to before they go back to the actors.
        env_device: device the env workers step on (the answers' device when ``output_device`` is unset).
        storing_device: device of the collected batches (a collector setting; the server refuses it).

    Examples:
        >>> config = InferenceDeviceConfig(policy_device="cpu", env_device="cpu")
        >>> config.server_output_device()
        device(type='cpu')
    """

    policy_device: torch.device | str | None = None
    output_device: torch.device | str | None = None
    env_device: torch.device | str | None = None
    storing_device: torch.device | str | None = None

    def __post_init__(self) -> None:
        self.policy_device = _as_device(self.policy_device)
        self.output_device = _as_device(self.output_device)
        self.env_device = _as_device(self.env_device)
        self.storing_device = _as_device(self.storing_device)

    def server_output_device(self) -> torch.device | None:
        """The device of the answers the actors receive: ``output_device``, else ``env_device``."""
        return self.output_device if self.output_device is not None else self.env_device  # type: ignore[return-value]


@dataclass
class InferenceServerConfig:
    """Batching, timing and instrumentation settings of an :class:`InferenceServer`.

    Args:
        service_backend: where the serve loop runs: ``"thread"`` (a thread of this process), ``"process"`` or
            ``"ray"`` (see ``docs/differences.md`` for what tdrl's server supports).
        max_batch_size: most requests per forward pass.
        static_batch_size: fixed batch size for a CUDA-graphed policy (at least ``max_batch_size``).
        min_batch_size: requests to gather (for up to ``timeout`` s) before a forward pass.
        timeout: seconds to wait for more requests before serving a partial batch.
        collect_stats: keep batch-size, queue-wait and forward-time statistics (``server.stats()``).
        stats_window_size: recent samples kept for the percentiles.
        max_inflight_per_env: unanswered requests each env may have (``None``: unbounded).

    Examples:
        >>> InferenceServerConfig(max_batch_size=8, timeout=0.001).max_batch_size
        8
        >>> InferenceServerConfig(min_batch_size=0)
        Traceback (most recent call last):
        ...
        ValueError: min_batch_size must be a positive int, got 0
    """

    service_backend: Literal["thread", "process", "ray"] = "thread"
    max_batch_size: int = 64
    static_batch_size: int | None = None
    min_batch_size: int = 1
    timeout: float = 0.01
    collect_stats: bool = True
    stats_window_size: int = 1024
    max_inflight_per_env: int | None = None

    def __post_init__(self) -> None:
        if self.service_backend not in ("thread", "process", "ray"):
            raise ValueError(f"service_backend must be 'thread', 'process' or 'ray', got {self.service_backend!r}")
        for name in ("max_batch_size", "min_batch_size", "stats_window_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.min_batch_size > self.max_batch_size:
            raise ValueError(f"min_batch_size ({self.min_batch_size}) exceeds max_batch_size ({self.max_batch_size})")
        if self.static_batch_size is not None and self.static_batch_size < self.max_batch_size:
            raise ValueError(
                f"static_batch_size ({self.static_batch_size}) must be at least max_batch_size ({self.max_batch_size})"
            )
        if not self.timeout >= 0:
            raise ValueError(f"timeout must be >= 0 seconds, got {self.timeout!r}")
        if self.max_inflight_per_env is not None and self.max_inflight_per_env < 1:
            raise ValueError(f"max_inflight_per_env must be at least 1 or None, got {self.max_inflight_per_env}")
