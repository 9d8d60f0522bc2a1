"""Fast random samplers for action specs (what ``EnvBase.rand_action`` calls at every step)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tdrl.data import Bounded

__all__ = ["NO_SHAPE", "action_sampler"]

NO_SHAPE = torch.Size(())


def action_sampler(spec: Any) -> Callable[[torch.Size], torch.Tensor]:
    """A uniform sampler ``f(extra_batch_shape) -> tensor`` for one action leaf.

    Continuous ``Bounded`` leaves get a precomputed ``uniform_`` (scalar bounds) or ``rand * scale + low``;
    other specs use ``spec.rand``.

    Args:
        spec: the action leaf spec.

    Returns:
        The sampler.

    Examples:
        >>> f = action_sampler(Bounded(-1.0, 1.0, shape=(3,)))
        >>> f(NO_SHAPE).shape, f(torch.Size([2])).shape
        (torch.Size([3]), torch.Size([2, 3]))
    """
    if isinstance(spec, Bounded) and spec.dtype.is_floating_point:
        low = spec.low
        scale = spec.high - spec.low
        full = spec.shape
        lo = low.flatten()[0].item() if low.numel() else 0.0
        hi = spec.high.flatten()[0].item() if low.numel() else 0.0
        if (
            low.numel()
            and bool((low == lo).all())
            and bool((spec.high == hi).all())
            and lo < hi < float("inf")
        ):
            # One uniform_ call instead of rand * scale + low when the bounds are scalars (e.g. [-1, 1]).
            dtype, device = low.dtype, low.device

            def uniform(shape: torch.Size) -> torch.Tensor:
                size = full if not shape else (*shape, *full)
                return torch.empty(size, dtype=dtype, device=device).uniform_(lo, hi)

            return uniform
        if torch.isfinite(scale).all():

            def sample(shape: torch.Size) -> torch.Tensor:
                size = full if not shape else (*shape, *full)
                return torch.rand(size, dtype=low.dtype, device=low.device).mul_(scale).add_(low)

            return sample
    return spec.rand
