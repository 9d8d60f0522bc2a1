"""``Reward2GoTransform``: the discounted return from each step to the end of its trajectory, for stored data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.envs.transforms._base import Transform

__all__ = ["Reward2GoTransform", "reward2go"]


def reward2go(reward: torch.Tensor, done: torch.Tensor, gamma: float | torch.Tensor) -> torch.Tensor:
    """``G_t = r_t + gamma * G_{t+1}`` along the second-to-last dim, restarting after every ``done``.

    The last step of the data ends a trajectory too. ``reward`` and ``done`` are ``[..., T, 1]``.

    Examples:
        >>> r = torch.ones(4, 1)
        >>> d = torch.tensor([[False], [True], [False], [False]])
        >>> reward2go(r, d, 0.5).flatten().tolist()
        [1.5, 1.0, 1.5, 1.0]
    """
    if reward.shape != done.shape:
        raise ValueError(f"reward2go: reward {tuple(reward.shape)} and done {tuple(done.shape)} must have one shape")
    if reward.ndim < 2:
        raise ValueError(f"reward2go: expected [..., T, 1] tensors, got shape {tuple(reward.shape)}")
    gamma = torch.as_tensor(gamma, dtype=reward.dtype, device=reward.device)
    out = torch.empty_like(reward)
    running = torch.zeros_like(reward[..., 0, :])
    not_done = (~done.bool()).to(reward.dtype)
    for t in range(reward.shape[-2] - 1, -1, -1):
        # a done at t cuts the link to t + 1: the return restarts there
        running = reward[..., t, :] + gamma * running * not_done[..., t, :]
        out[..., t, :] = running
    return out


class Reward2GoTransform(Transform):
    """Writes the reward-to-go of stored trajectories when they enter a replay buffer (``inv``, run on extend).

    Args:
        gamma: the discount.
        in_keys: the rewards (default ``[("next", "reward")]``).
        out_keys: where the returns go (default ``["reward_to_go"]``).
        done_key: the done flag, read under ``"next"`` (default ``"done"``).

    Examples:
        >>> from tensordict import TensorDict
        >>> t = Reward2GoTransform(gamma=0.5)
        >>> data = TensorDict({"next": {"reward": torch.ones(3, 1), "done": torch.zeros(3, 1, dtype=torch.bool)}}, [3])
        >>> t.inv(data)["reward_to_go"].flatten().tolist()
        [1.75, 1.5, 1.0]
    """

    def __init__(self, gamma: float | torch.Tensor | None = 1.0, in_keys: Sequence[NestedKey] | None = None,
                 out_keys: Sequence[NestedKey] | None = None, done_key: NestedKey | None = "done") -> None:
        in_keys = [("next", "reward")] if in_keys is None else in_keys
        out_keys = ["reward_to_go"] if out_keys is None else out_keys
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        if len(self.in_keys) != len(self.out_keys):
            raise ValueError(f"Reward2GoTransform: {len(self.in_keys)} in_keys for {len(self.out_keys)} out_keys")
        self.register_buffer("gamma", torch.as_tensor(1.0 if gamma is None else gamma))
        self.done_key = "done" if done_key is None else done_key

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        done_key = ("next", *((self.done_key,) if isinstance(self.done_key, str) else self.done_key))
        done = tensordict.get(done_key, None)
        if done is None:
            raise KeyError(f"Reward2GoTransform: done entry {done_key!r} not found in the data")
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            reward = tensordict.get(in_key, None)
            if reward is None:
                self._missing(in_key, tensordict)
                continue
            tensordict.set(out_key, reward2go(reward, done, self.gamma))
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        # Sampled data already hold the returns written on extend.
        return tensordict

    def _required_keys(self) -> list[NestedKey]:
        # Checked on the data it is given, not on an env (where it refuses to run, see _call).
        return []

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("Reward2GoTransform needs whole trajectories: use it in a replay buffer, not in an env")

    def transform_input_spec(self, input_spec: Any) -> Any:
        return input_spec
