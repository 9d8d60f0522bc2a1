"""``MultiAgentGAE``: GAE with per-agent values and team-shared rewards and flags."""

from __future__ import annotations

from typing import Any

import torch

from tdrl.objectives.value._base import _expand, _standardize
from tdrl.objectives.value.advantages import GAE

__all__ = ["MultiAgentGAE"]


class MultiAgentGAE(GAE):
    """GAE for a value network with one value per agent (``[*B, T, n_agents, 1]``).

    Rewards and done/terminated flags shared by the team (``[*B, T, 1]``, one dimension fewer than the
    values) are broadcast along the agent dimension; per-agent ones pass through. ``average_gae``
    standardizes each agent separately.

    Keyword Args:
        agent_dim: the agent dimension of the value tensor. Defaults to ``-2``.
        **kwargs: the arguments of :class:`GAE`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> est = MultiAgentGAE(gamma=0.9, lmbda=0.9, value_network=None)
        >>> data = TensorDict({"state_value": torch.zeros(2, 5, 3, 1), "next": {
        ...     "state_value": torch.zeros(2, 5, 3, 1), "reward": torch.ones(2, 5, 1),
        ...     "done": torch.zeros(2, 5, 1, dtype=torch.bool)}}, [2, 5])
        >>> est(data)["advantage"].shape
        torch.Size([2, 5, 3, 1])
    """

    def __init__(self, *, agent_dim: int = -2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.agent_dim = agent_dim

    def _to_agents(self, tensor: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        if tensor.ndim == value.ndim:
            return tensor
        if tensor.ndim != value.ndim - 1:
            raise ValueError(
                f"MultiAgentGAE: reward/done/terminated must have the value's number of dims (per agent) or "
                f"one fewer (team-shared); got shape {tuple(tensor.shape)} for values {tuple(value.shape)}"
            )
        dim = self.agent_dim % value.ndim
        shape = list(tensor.shape)
        shape.insert(dim, value.shape[dim])
        return tensor.unsqueeze(dim).expand(shape)

    def _prepare_signals(self, reward, done, terminated, value):
        return tuple(self._to_agents(x, value) for x in (reward, done, terminated))

    def _normalize_advantage(self, advantage, valid, groups):
        agent_dim = self.agent_dim % advantage.ndim
        if groups is not None:  # combine group ids with the agent index: both stay independent
            while groups.ndim < advantage.ndim:
                groups = groups.unsqueeze(-1)
            n_agents = advantage.shape[agent_dim]
            agents = torch.arange(n_agents, device=advantage.device)
            agents = agents.reshape([-1 if d == agent_dim else 1 for d in range(advantage.ndim)])
            groups = groups.expand(advantage.shape) * n_agents + agents
            mask = None if valid is None else _expand(valid, advantage)
            return _standardize(advantage, groups, mask, 1e-4)
        dims = [d for d in range(advantage.ndim) if d != agent_dim]
        return _standardize(advantage, None, valid, 1e-4, dims)
