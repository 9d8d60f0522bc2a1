"""CUDA memory statistics that are safe to call anywhere: zeros (and no-ops) without a CUDA device."""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from tdrl._utils.logging import logger

__all__ = ["cuda_memory_profile", "cuda_memory_stats", "reset_cuda_peak_stats"]

_GB = 1024**3
_KEYS = ("allocated_gb", "reserved_gb", "max_allocated_gb", "max_reserved_gb")


def _cuda_device(device: torch.device | int | str | None) -> torch.device | None:
    """The CUDA device to query, or ``None`` when there is nothing to query (no CUDA, or a non-CUDA device)."""
    if not torch.cuda.is_available():
        return None
    if device is None:
        return torch.device("cuda", torch.cuda.current_device())
    if isinstance(device, int):
        return torch.device("cuda", device)
    device = torch.device(device)
    if device.type != "cuda":
        return None
    return device if device.index is not None else torch.device("cuda", torch.cuda.current_device())


def cuda_memory_stats(device: torch.device | int | str | None = None) -> dict[str, float]:
    """Allocated, reserved and peak CUDA memory of ``device`` in GiB (all ``0.0`` without CUDA).

    Args:
        device: the CUDA device (``None``: the current one). A CPU/MPS device, or no CUDA, gives zeros.

    Returns:
        ``{"allocated_gb", "reserved_gb", "max_allocated_gb", "max_reserved_gb"}`` as floats.

    Examples:
        >>> sorted(cuda_memory_stats("cpu").items())
        [('allocated_gb', 0.0), ('max_allocated_gb', 0.0), ('max_reserved_gb', 0.0), ('reserved_gb', 0.0)]
    """
    dev = _cuda_device(device)
    if dev is None:
        return dict.fromkeys(_KEYS, 0.0)
    return {
        "allocated_gb": torch.cuda.memory_allocated(dev) / _GB,
        "reserved_gb": torch.cuda.memory_reserved(dev) / _GB,
        "max_allocated_gb": torch.cuda.max_memory_allocated(dev) / _GB,
        "max_reserved_gb": torch.cuda.max_memory_reserved(dev) / _GB,
    }


def reset_cuda_peak_stats(device: torch.device | int | str | None = None) -> None:
    """Clears the peak-memory counters of ``device`` (a no-op without CUDA or on a non-CUDA device).

    Examples:
        >>> reset_cuda_peak_stats()
    """
    dev = _cuda_device(device)
    if dev is not None:
        torch.cuda.reset_peak_memory_stats(dev)


class cuda_memory_profile(contextlib.ContextDecorator):  # noqa: N801 - TorchRL's name
    """Context manager (or decorator) measuring CUDA memory over a block; ``stats`` holds the result.

    On entry the peak counters are cleared (``reset_peaks``) and the current stats read; on exit ``stats`` gets
    :func:`cuda_memory_stats` and, with ``log``, one INFO line gives the current values, their change over the
    block and the peaks. Without CUDA every value is ``0.0``.

    Args:
        label: names the block in the log line.

    Keyword Args:
        device: the CUDA device (``None``: the current one).
        log: log one line at exit.
        reset_peaks: clear the peak counters at entry so that ``max_*`` cover the block only.

    Examples:
        >>> with cuda_memory_profile("warmup", log=False) as prof:
        ...     _ = [0] * 10
        >>> prof.stats["allocated_gb"], prof.delta["allocated_gb"]
        (0.0, 0.0)
    """

    def __init__(
        self,
        label: str,
        *,
        device: torch.device | int | str | None = None,
        log: bool = True,
        reset_peaks: bool = True,
    ) -> None:
        self.label = label
        self.device = device
        self.log = log
        self.reset_peaks = reset_peaks
        self.stats: dict[str, float] = dict.fromkeys(_KEYS, 0.0)
        self._before: dict[str, float] = dict.fromkeys(_KEYS, 0.0)

    @property
    def delta(self) -> dict[str, float]:
        """Change of the allocated and reserved memory over the block, in GiB."""
        return {k: self.stats[k] - self._before[k] for k in ("allocated_gb", "reserved_gb")}

    def __enter__(self) -> cuda_memory_profile:
        if self.reset_peaks:
            reset_cuda_peak_stats(self.device)
        self._before = cuda_memory_stats(self.device)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stats = cuda_memory_stats(self.device)
        if self.log:
            d = self.delta
            logger.info(
                "cuda_memory_profile[%s]: alloc=%.3f GB (%+.3f), reserved=%.3f GB (%+.3f), "
                "max_alloc=%.3f GB, max_reserved=%.3f GB", self.label, self.stats["allocated_gb"],
                d["allocated_gb"], self.stats["reserved_gb"], d["reserved_gb"], self.stats["max_allocated_gb"],
                self.stats["max_reserved_gb"],
            )
