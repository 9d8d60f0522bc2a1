"""Helpers shared by the discrete-action losses (DQN, CQL, IQL, discrete SAC)."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["chosen_action_value"]


def chosen_action_value(values: Tensor, action: Tensor, action_space: str) -> Tensor:
    """The value of the taken action: ``values[..., a]`` (categorical) or ``(values * one_hot).sum(-1)``.

    Args:
        values: ``(..., n_actions)`` action values.
        action: the action, an index (``"categorical"``, with or without a trailing 1) or a one-hot.
        action_space: ``"categorical"`` or a one-hot space.

    Returns:
        ``(...)`` values of the taken actions.

    Examples:
        >>> import torch
        >>> values = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> chosen_action_value(values, torch.tensor([1, 0]), "categorical")
        tensor([2., 3.])
        >>> chosen_action_value(values, torch.tensor([[0, 1], [1, 0]]), "one_hot")
        tensor([2., 3.])
    """
    if action_space == "categorical":
        if action.ndim != values.ndim:
            action = action.unsqueeze(-1)
        return torch.gather(values, -1, action.long()).squeeze(-1)
    return (values * action.to(values.dtype)).sum(-1)
