"""Seeding helpers."""

from __future__ import annotations

import random

import numpy as np
import torch

__all__ = ["seed_generator", "set_global_seed"]


def seed_generator(seed: int) -> int:
    """Derives the next seed of a chain from ``seed``, as TorchRL does (same values, so seeded runs match).

    The chain is what ``EnvBase.set_seed`` returns and what batched envs give their next worker.

    Examples:
        >>> seed_generator(0) == seed_generator(0)
        True
        >>> seed_generator(0)
        795726461
    """
    # TorchRL's definition: 8 bytes from numpy's PCG64 seeded with ``seed``, big-endian, mod 2**32 - 1.
    rng = np.random.default_rng(int(seed))
    return int.from_bytes(rng.bytes(8), "big") % (2**32 - 1)


def set_global_seed(seed: int) -> None:
    """Seeds python's ``random``, numpy and torch."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
