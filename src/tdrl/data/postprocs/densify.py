"""``DensifyReward``: spread each trajectory's (sparse) rewards back over its earlier steps."""

from __future__ import annotations

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import unravel_key

__all__ = ["DensifyReward"]


def _reward_to_go(reward: torch.Tensor, done: torch.Tensor, gamma: float) -> torch.Tensor:
    """``g[t] = r[t] + gamma * g[t + 1]`` along dim -2, restarting after each done step."""
    out = torch.empty_like(reward)
    carry = torch.zeros_like(reward.select(-2, 0))
    keep = (~done.bool()).to(reward.dtype)
    for t in range(reward.shape[-2] - 1, -1, -1):
        carry = reward.select(-2, t) + gamma * carry * keep.select(-2, t)
        out.select(-2, t).copy_(carry)
    return out


class DensifyReward(TensorDictModuleBase):
    """Replaces ``("next", reward_key)`` by its (discounted) reward-to-go within each trajectory.

    With a sparse reward paid at the end of an episode, every step of the episode then carries it.
    Steps after the last ``done`` of a row sum the rewards that follow them (often none). Time runs along
    the reward's dim -2 (rewards are ``[..., T, 1]``).

    Keyword Args:
        reward_key: the reward under ``"next"``. Defaults to ``"reward"``.
        done_key: the done flag under ``"next"``. Defaults to ``"done"``.
        reward_key_out: where the result goes under ``"next"``; defaults to ``reward_key``.
        time_dim: accepted for TorchRL compatibility (time is the reward's dim -2, as in TorchRL).
        discount: the discount factor. Defaults to ``1.0``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"next": {"reward": torch.zeros(6, 1), "done": torch.zeros(6, 1, dtype=torch.bool)}}, [6])
        >>> td["next", "done"][[2, 4]] = True
        >>> td["next", "reward"][2], td["next", "reward"][4] = 3.0, 5.0
        >>> DensifyReward()(td)["next", "reward"].squeeze(-1).tolist()
        [3.0, 3.0, 3.0, 5.0, 5.0, 0.0]
    """

    def __init__(
        self,
        *,
        reward_key: NestedKey = "reward",
        done_key: NestedKey = "done",
        reward_key_out: NestedKey | None = None,
        time_dim: int = 2,
        discount: float = 1.0,
    ) -> None:
        super().__init__()
        self.in_keys = [unravel_key(reward_key), unravel_key(done_key)]
        self.out_keys = [unravel_key(reward_key if reward_key_out is None else reward_key_out)]
        self.time_dim = time_dim
        self.discount = discount

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        reward = tensordict.get(("next", self.in_keys[0]), None)
        done = tensordict.get(("next", self.in_keys[1]), None)
        if reward is None or done is None:
            missing = [k for k, v in zip(self.in_keys, (reward, done)) if v is None]
            raise KeyError(f"DensifyReward: no ('next', {missing[0]!r}) entry in the input.")
        if reward.shape != done.shape:
            raise ValueError(
                f"DensifyReward: reward and done must have the same shape, got {tuple(reward.shape)} and "
                f"{tuple(done.shape)}."
            )
        if reward.ndim < 2:
            raise ValueError(f"DensifyReward: rewards need a time dim and a trailing dim, got {tuple(reward.shape)}.")
        tensordict.set(("next", self.out_keys[0]), _reward_to_go(reward, done, self.discount))
        return tensordict
