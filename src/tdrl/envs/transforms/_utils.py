"""Small helpers shared by the transform families (reset masks, done-key groups, spec look-ups)."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

__all__ = ["done_prefixes", "enclosing_env", "prefixed", "reset_mask"]


def prefixed(prefix: tuple[str, ...], name: str) -> NestedKey:
    """``name`` placed under ``prefix`` (a plain string at the root)."""
    return (*prefix, name) if prefix else name


def done_prefixes(done_spec: Any) -> list[tuple[str, ...]]:
    """The nesting paths holding a ``"done"`` entry in a done spec (``[()]`` for a flat env)."""
    out: list[tuple[str, ...]] = []
    for key in done_spec.keys(True, True):
        path = (key,) if isinstance(key, str) else tuple(key)
        if path[-1] == "done" and path[:-1] not in out:
            out.append(path[:-1])
    return out or [()]


def reset_mask(
    tensordict: TensorDictBase | None, reset_key: NestedKey, shape: torch.Size, device: Any
) -> torch.Tensor | None:
    """The ``_reset`` mask of a reset input broadcast to ``shape``, or None for a full reset."""
    if tensordict is None:
        return None
    mask = tensordict.get(reset_key, None)
    if mask is None:
        return None
    if mask.shape != shape:
        if mask.ndim > len(shape):  # e.g. a (*batch, 1) done-shaped mask for a per-env quantity
            mask = mask.reshape(*shape, -1).any(-1)
        else:
            mask = mask.reshape(*mask.shape, *(1,) * (len(shape) - mask.ndim)).expand(shape)
    return mask.to(device) if device is not None and mask.device != torch.device(device) else mask


def enclosing_env(transform: Any) -> Any:
    """The ``TransformedEnv`` holding ``transform`` (through nested ``Compose``), or None when detached."""
    node = transform.container
    while node is not None and not hasattr(node, "base_env"):
        node = node.container
    return node
