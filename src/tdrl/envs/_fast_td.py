"""Builds a ``TensorDict`` from a ready dict of validated values, with no checks (hot-path helper).

``TensorDict._new_unsafe`` already skips validation but still normalises its arguments on every call; the
env hot paths (``step_mdp``, ``rollout``) build many small tensordicts whose batch size and device come
from another tensordict, so they are already normalised. At import time the fast constructor is checked
against ``_new_unsafe``: if a tensordict release adds an attribute, the safe constructor is used instead.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict

__all__ = ["fast_td"]


def _fast_td(
    source: dict[Any, Any], batch_size: torch.Size, device: torch.device | None, names: Any = None
) -> TensorDict:
    td = TensorDict.__new__(TensorDict)
    td._device = device
    td._tensordict = source
    td._batch_size = batch_size
    td._td_dim_names = names
    return td


def _safe_td(
    source: dict[Any, Any], batch_size: torch.Size, device: torch.device | None, names: Any = None
) -> TensorDict:
    return TensorDict._new_unsafe(source, batch_size=batch_size, device=device, names=names, nested=False)


def _fast_matches_safe() -> bool:
    value = torch.zeros(2)
    ref = _safe_td({"a": value}, torch.Size([2]), None)
    fast = _fast_td({"a": value}, torch.Size([2]), None)
    return vars(ref).keys() == vars(fast).keys() and type(ref._tensordict) is dict


fast_td = _fast_td if _fast_matches_safe() else _safe_td
fast_td.__doc__ = """Returns a ``TensorDict`` wrapping ``source`` (a plain ``str -> value`` dict, taken over, not copied).

Args:
    source: the entries; values must already have the right leading shape and device.
    batch_size: a ``torch.Size``.
    device: a ``torch.device`` or ``None``.
    names: dimension names or ``None``.

Examples:
    >>> import torch
    >>> td = fast_td({"a": torch.zeros(3)}, torch.Size([3]), None)
    >>> td["a"].shape
    torch.Size([3])
"""
