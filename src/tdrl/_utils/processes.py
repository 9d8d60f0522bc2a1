"""How worker processes are started."""

from __future__ import annotations

import multiprocessing as mp

import torch

__all__ = ["default_start_method"]


def default_start_method() -> str:
    """``"fork"`` where the platform has it and this process has not initialised CUDA, else ``"spawn"``.

    Forking is the cheapest start (no pickling of the env factory or the policy), but a forked child cannot
    use CUDA once its parent has initialised it.

    Examples:
        >>> default_start_method() in ("fork", "spawn")
        True
    """
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    return "fork" if "fork" in mp.get_all_start_methods() and not cuda else "spawn"
