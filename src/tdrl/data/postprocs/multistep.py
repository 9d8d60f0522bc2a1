"""``MultiStep``: n-step returns computed on collected trajectories."""

from __future__ import annotations

import torch
from tensordict import NestedKey, TensorDictBase
from torch import nn

__all__ = ["MultiStep"]

_DONE_KEYS = ("done", "terminated", "truncated")


class MultiStep(nn.Module):
    r"""Rewrites a ``[*batch, T]`` trajectory batch with n-step rewards and shifted next entries.

    Sutton, "Learning to predict by the methods of temporal differences", Machine Learning 3 (1988).

    A trajectory segment ends at a ``("next", "done")`` step (inclusive) or at the end of the batch.
    For each step :math:`t`, with :math:`k_t = \min(n, \text{steps left in its segment})`:

    .. math::
        R_t = \sum_{i=0}^{k_t - 1} \gamma^i r_{t+i}

    and the module writes

    - ``("next", "reward")``: :math:`R_t`; the input reward moves to ``("next", "original_reward")``;
    - every other ``"next"`` entry (done flags excepted) taken from step :math:`t + k_t - 1`;
    - ``"steps_to_next_obs"``: :math:`k_t`; ``"gamma"``: :math:`\gamma^{k_t}`;
    - ``"nonterminal"``: :math:`k_t > 1` (and ``("collector", "mask")`` where present).

    Args:
        gamma: the discount, in ``(0, 1]``.
        n_steps: the look-ahead (number of rewards summed), ``>= 1``.

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict({
        ...     ("next", "reward"): torch.ones(1, 4, 1),
        ...     ("next", "done"): torch.tensor([[0, 1, 0, 0]], dtype=torch.bool).unsqueeze(-1),
        ...     ("next", "obs"): torch.arange(1.0, 5.0).view(1, 4, 1),
        ... }, [1, 4])
        >>> out = MultiStep(gamma=0.5, n_steps=2)(td)
        >>> out["next", "reward"].flatten().tolist(), out["steps_to_next_obs"].tolist()
        ([1.5, 1.0, 1.5, 1.0], [[2, 1, 2, 1]])
        >>> out["next", "obs"].flatten().tolist()
        [2.0, 2.0, 4.0, 4.0]
    """

    gammas: torch.Tensor  # a registered buffer: nn.Module's __getattr__ is typed Tensor | Module

    def __init__(self, gamma: float, n_steps: int) -> None:
        super().__init__()
        if n_steps <= 0:
            raise ValueError(f"n_steps must be a positive integer, got {n_steps}.")
        if not 0 < gamma <= 1:
            raise ValueError(f"gamma must lie in (0, 1], got {gamma}.")
        self.gamma = gamma
        self.n_steps = n_steps
        self.register_buffer("gammas", torch.tensor([gamma**i for i in range(n_steps)], dtype=torch.float))
        self.done_key: NestedKey = "done"
        self.done_keys = _DONE_KEYS
        self.reward_keys: tuple[NestedKey, ...] = ("reward",)
        self.mask_key: NestedKey = ("collector", "mask")

    def _segment_steps(self, done: torch.Tensor) -> torch.Tensor:
        """``k_t``: steps from ``t`` to the end of its segment, capped at ``n_steps``."""
        T = done.shape[-1]
        arange = torch.arange(T, device=done.device)
        last = torch.where(done, arange, torch.full_like(arange, T - 1))
        seg_end = last.flip(-1).cummin(-1).values.flip(-1)
        return (seg_end - arange + 1).clamp_max(self.n_steps)

    def _nstep_reward(self, reward: torch.Tensor, steps: torch.Tensor, time_dim: int) -> torch.Tensor:
        extra = reward.ndim - steps.ndim
        steps = steps.reshape(*steps.shape, *([1] * extra))
        out = reward.clone()
        T = reward.shape[time_dim]
        for i in range(1, min(self.n_steps, T)):
            shifted = torch.zeros_like(reward)
            shifted.narrow(time_dim, 0, T - i).copy_(reward.narrow(time_dim, i, T - i))
            out = out + self.gammas[i].to(reward.dtype) * shifted * (steps > i)
        return out

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns a shallow copy of ``tensordict`` rewritten as described above."""
        td = tensordict.clone(False)
        done = td.get(("next", self.done_key), None)
        if done is None:
            raise KeyError(f"MultiStep needs a ('next', {self.done_key!r}) entry.")
        if done.shape != td.batch_size:
            if done.shape[:-1] == td.batch_size and done.shape[-1] == 1:
                done = done.squeeze(-1)
            else:
                raise ValueError(
                    f"MultiStep: ('next', {self.done_key!r}) has shape {tuple(done.shape)}; expected the batch "
                    f"shape {tuple(td.batch_size)} (optionally with a trailing singleton)."
                )
        time_dim = td.ndim - 1
        steps = self._segment_steps(done.bool())
        for key in self.reward_keys:
            reward = td.get(("next", key))
            td.set(("next", "original_reward"), reward)
            td.set(("next", key), self._nstep_reward(reward, steps, time_dim))
        gather_at = torch.arange(done.shape[-1], device=done.device) + steps - 1
        shifted = td.get("next").exclude(*self.reward_keys, "original_reward", *self.done_keys)
        td.get("next").update(shifted.gather(time_dim, gather_at))
        td.set("steps_to_next_obs", steps)
        td.set("gamma", self.gamma ** steps.to(torch.float))
        nonterminal = steps > 1
        mask = td.get(self.mask_key, None)
        if mask is not None:
            nonterminal = nonterminal & mask.reshape(nonterminal.shape).bool()
        td.set("nonterminal", nonterminal)
        return td
