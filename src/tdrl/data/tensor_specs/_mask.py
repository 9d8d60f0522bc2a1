"""Action-mask helpers shared by the discrete specs (sampling, membership and projection under a mask).

A mask is a boolean tensor whose last dim has one entry per category (``True`` = allowed) and whose
leading dims broadcast to the spec's batch dims.
"""

from __future__ import annotations

import torch


def check_mask(mask: torch.Tensor | None, shape: torch.Size, spec_name: str) -> torch.Tensor | None:
    """Validates ``mask`` against the expected ``shape`` and returns it expanded to that shape."""
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor):
        mask = torch.as_tensor(mask)
    if mask.dtype is not torch.bool:
        raise TypeError(f"{spec_name}: the mask must be a bool tensor, got dtype {mask.dtype}.")
    try:
        return mask.expand(shape)
    except RuntimeError as err:
        raise ValueError(
            f"{spec_name}: cannot expand a mask of shape {tuple(mask.shape)} to the expected shape {tuple(shape)}."
        ) from err


def masked_sample(mask: torch.Tensor, lead: torch.Size) -> torch.Tensor:
    """Draws one allowed category per element of ``lead`` (the batch shape), uniformly among the allowed."""
    n = mask.shape[-1]
    probs = mask.expand(*lead, n).reshape(-1, n).float()
    if probs.shape[0] and not bool(probs.sum(-1).gt(0).all()):
        raise RuntimeError("Cannot sample from a mask that allows no category for some element.")
    if probs.shape[0] == 0:
        return torch.zeros(lead, dtype=torch.long, device=mask.device)
    return torch.multinomial(probs, 1).reshape(lead)


def mask_allows(mask: torch.Tensor, idx: torch.Tensor) -> bool:
    """Whether every index in ``idx`` (already within ``[0, n)``) is allowed by ``mask``."""
    n = mask.shape[-1]
    shape = torch.broadcast_shapes(mask.shape[:-1], idx.shape)
    gathered = mask.expand(*shape, n).gather(-1, idx.long().expand(shape).unsqueeze(-1))
    return bool(gathered.all())


def nearest_allowed(mask: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Replaces each index by the closest index the mask allows (ties go to the lower index)."""
    n = mask.shape[-1]
    shape = torch.broadcast_shapes(mask.shape[:-1], idx.shape)
    arange = torch.arange(n, device=idx.device)
    dist = (arange - idx.long().expand(shape).unsqueeze(-1)).abs().float()
    dist = dist.masked_fill(~mask.expand(*shape, n), float("inf"))
    return dist.argmin(-1)
