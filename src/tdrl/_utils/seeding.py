"""Seeding helpers."""

from __future__ import annotations

import random

import numpy as np
import torch

__all__ = ["seed_generator", "set_global_seed"]


def seed_generator(seed: int) -> int:
    """Derives a new seed from ``seed`` (deterministic, well-mixed, in ``[0, 2**31)``).

    Examples:
        >>> seed_generator(0) == seed_generator(0)
        True
        >>> seed_generator(0) != seed_generator(1)
        True
    """
    # SplitMix64 finaliser: consecutive seeds map to unrelated streams.
    z = (int(seed) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return int((z ^ (z >> 31)) % (2**31))


def set_global_seed(seed: int) -> None:
    """Seeds python's ``random``, numpy and torch."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
