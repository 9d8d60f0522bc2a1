"""Returns as entries: ``Reward2GoTransform`` (the discounted return to the end of each stored trajectory) and
``TargetReturn`` (the return still to collect, for return-conditioned policies such as Decision Transformers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Unbounded
from tdrl.envs.transforms._base import Transform
from tdrl.envs.transforms._utils import reset_mask

__all__ = ["Reward2GoTransform", "TargetReturn", "reward2go"]


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


class TargetReturn(Transform):
    """Writes the return an agent is asked to reach, an observation of return-conditioned policies.

    At reset each ``out_keys`` entry is ``target_return``; with ``mode="reduce"`` every step subtracts the
    step's reward (``("next", "target_return") = "target_return" - ("next", "reward")``), with
    ``mode="constant"`` it stays at ``target_return``. Partial resets (``"_reset"``) reset only the
    selected envs.

    Args:
        target_return: the return asked for at the start of each episode.
        mode: ``"reduce"`` or ``"constant"``.
        in_keys: the reward entries (default ``["reward"]``).
        out_keys: the target entries (default ``["target_return"]``).
        reset_key: the partial-reset mask (default ``"_reset"``).

    Examples:
        >>> from tdrl.envs import GymEnv, TransformedEnv
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"), TargetReturn(10.0))
        >>> _ = env.set_seed(0)
        >>> r = env.rollout(3)
        >>> torch.allclose(r["next", "target_return"], r["target_return"] - r["next", "reward"])
        True
    """

    def __init__(self, target_return: float, mode: str = "reduce", in_keys: Sequence[NestedKey] | None = None,
                 out_keys: Sequence[NestedKey] | None = None, reset_key: NestedKey | None = None) -> None:
        if mode not in ("reduce", "constant"):
            raise ValueError(f"TargetReturn: mode must be 'reduce' or 'constant', got {mode!r}")
        super().__init__(in_keys=["reward"] if in_keys is None else in_keys,
                         out_keys=["target_return"] if out_keys is None else out_keys)
        if len(self.in_keys) != len(self.out_keys):
            raise ValueError(f"TargetReturn: {len(self.in_keys)} in_keys but {len(self.out_keys)} out_keys")
        self.target_return = float(target_return)
        self.mode = mode
        self.reset_key = "_reset" if reset_key is None else reset_key
        self._shapes: dict = {}  # out_key -> (unbatched reward shape, dtype), from the reward spec

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for out_key in self.out_keys:
            shape, dtype = self._shapes.get(out_key, ((1,), torch.get_default_dtype()))
            fresh = torch.full((*tensordict_reset.batch_size, *shape), self.target_return, dtype=dtype,
                               device=tensordict_reset.device)
            prev = None if tensordict is None else tensordict.get(out_key, None)
            mask = None if prev is None else reset_mask(tensordict, self.reset_key, prev.shape, prev.device)
            tensordict_reset.set(out_key, fresh if mask is None else torch.where(mask, fresh, prev))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            prev = tensordict.get(out_key, None)
            if prev is None:
                raise KeyError(f"TargetReturn: the step input has no {out_key!r} entry (it is written at reset; "
                               "keep it in the policy's input)")
            if self.mode == "constant":
                next_tensordict.set(out_key, prev.clone())
                continue
            reward = next_tensordict.get(in_key, None)
            if reward is None:
                self._missing(in_key, next_tensordict)
                continue
            next_tensordict.set(out_key, prev - reward)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("TargetReturn keeps an episode's running target: use it inside a TransformedEnv")

    def transform_output_spec(self, output_spec: Any) -> Any:
        output_spec = output_spec.clone()
        rewards, obs = output_spec["full_reward_spec"], output_spec["full_observation_spec"]
        batch = len(output_spec.shape)
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in rewards.keys(True, True):
                raise KeyError(f"TargetReturn: no {in_key!r} in the reward spec; available: "
                               f"{list(rewards.keys(True, True))}")
            leaf = rewards[in_key]
            self._shapes[out_key] = (tuple(leaf.shape[batch:]), leaf.dtype)
            obs[out_key] = Unbounded(shape=leaf.shape, dtype=leaf.dtype, device=leaf.device)
        output_spec["full_observation_spec"] = obs
        return output_spec

    def _required_keys(self) -> list[NestedKey]:
        return []

    def _added_keys(self) -> list[NestedKey]:
        return list(self.out_keys)

    def __repr__(self) -> str:
        return f"TargetReturn(target_return={self.target_return}, mode={self.mode!r}, out_keys={self.out_keys})"
