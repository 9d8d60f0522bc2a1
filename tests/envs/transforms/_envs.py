"""Small deterministic envs for the transform and batched-env tests (pure torch, fast)."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from tdrl.data import Bounded, Categorical, Composite, OneHot, Unbounded
from tdrl.envs import EnvBase


def _done_spec(bs: torch.Size) -> Composite:
    leaf = Categorical(2, (*bs, 1), dtype=torch.bool)
    return Composite(done=leaf.clone(), terminated=leaf.clone(), truncated=leaf.clone(), shape=bs)


class VectorEnv(EnvBase):
    """``observation`` (3,) and an identical ``observation_copy``, ``obs64`` (float64), ``t`` (steps since
    reset, int64 (1,)), optional ``pixels`` (8, 8, 3) uint8; float64 actions (2,); reward =
    ``observation[0]`` after the step; terminates after ``episode_len`` steps."""

    def __init__(self, episode_len: int = 7, pixels: bool = False, batch_size=(), fail_at: int | None = None):
        super().__init__(batch_size=batch_size)
        bs = self.batch_size
        obs = Composite(
            observation=Unbounded((*bs, 3)),
            observation_copy=Unbounded((*bs, 3)),
            obs64=Unbounded((*bs, 2), dtype=torch.float64),
            t=Bounded(0, 1000, (*bs, 1), dtype=torch.int64),
            shape=bs,
        )
        if pixels:
            obs["pixels"] = Bounded(0, 255, (*bs, 8, 8, 3), dtype=torch.uint8)
        self.observation_spec = obs
        self.action_spec = Bounded(-1.0, 1.0, (*bs, 2), dtype=torch.float64)
        self.reward_spec = Unbounded((*bs, 1))
        self.full_done_spec = _done_spec(bs)
        self.episode_len = episode_len
        self.pixels = pixels
        self.fail_at = fail_at
        self.steps_total = 0
        self.gen = torch.Generator().manual_seed(0)
        self._t = torch.zeros(*bs, 1, dtype=torch.int64)
        self._obs = torch.zeros(*bs, 3)

    def _out(self) -> TensorDict:
        bs = self.batch_size
        out = {
            "observation": self._obs.clone(),
            "observation_copy": self._obs.clone(),
            "obs64": self._obs[..., :2].double(),
            "t": self._t.clone(),
        }
        if self.pixels:
            level = (self._obs[..., :1] * 20 + 128).clamp(0, 255).to(torch.uint8)
            out["pixels"] = level.unsqueeze(-2).unsqueeze(-2).expand(*bs, 8, 8, 3).clone()
        return TensorDict(out, bs)

    def _reset(self, tensordict):
        mask = None if tensordict is None else tensordict.get("_reset", None)
        fresh = torch.randn(self._obs.shape, generator=self.gen)
        if mask is None:
            self._obs, self._t = fresh, torch.zeros_like(self._t)
        else:
            self._obs = torch.where(mask, fresh, self._obs)
            self._t = torch.where(mask, torch.zeros_like(self._t), self._t)
        out = self._out()
        out.update(_done_spec(self.batch_size).zero())
        return out

    def _step(self, tensordict):
        self.steps_total += 1
        if self.fail_at is not None and self.steps_total >= self.fail_at:
            raise ValueError(f"VectorEnv: deliberate failure at step {self.steps_total}")
        action = tensordict.get("action")
        if action.dtype != torch.float64:
            raise TypeError(f"VectorEnv expects float64 actions, got {action.dtype}")
        self._obs = self._obs + 0.1 * action.sum(-1, keepdim=True).float()
        self._t = self._t + 1
        terminated = self._t >= self.episode_len
        out = self._out()
        out.set("reward", self._obs[..., :1].clone())
        out.set("done", terminated.clone())
        out.set("terminated", terminated)
        out.set("truncated", torch.zeros_like(terminated))
        return out

    def _set_seed(self, seed):
        self.gen.manual_seed(int(seed) if seed is not None else 0)


class MaskedEnv(EnvBase):
    """A discrete env with an ``action_mask`` observation: reward 1 for an allowed action, -1 otherwise."""

    def __init__(self, batch_size=()):
        super().__init__(batch_size=batch_size)
        bs = self.batch_size
        self.observation_spec = Composite(
            observation=Unbounded((*bs, 3)), action_mask=Categorical(2, (*bs, 4), dtype=torch.bool), shape=bs
        )
        self.action_spec = Categorical(4, bs)
        self.reward_spec = Unbounded((*bs, 1))
        self.full_done_spec = _done_spec(bs)
        self.gen = torch.Generator().manual_seed(0)
        self._mask = self._new_mask()

    def _new_mask(self) -> torch.Tensor:
        mask = torch.rand((*self.batch_size, 4), generator=self.gen) > 0.5
        mask[..., 0] |= ~mask.any(-1)
        return mask

    def _reset(self, tensordict):
        self._mask = self._new_mask()
        out = TensorDict({"observation": torch.zeros(*self.batch_size, 3), "action_mask": self._mask.clone()},
                         self.batch_size)
        out.update(_done_spec(self.batch_size).zero())
        return out

    def _step(self, tensordict):
        action = tensordict.get("action")
        allowed = self._mask.gather(-1, action.long().unsqueeze(-1))
        self._mask = self._new_mask()
        done = torch.zeros(*self.batch_size, 1, dtype=torch.bool)
        return TensorDict(
            {
                "observation": torch.zeros(*self.batch_size, 3),
                "action_mask": self._mask.clone(),
                "reward": allowed.float() * 2 - 1,
                "done": done,
                "terminated": done.clone(),
                "truncated": done.clone(),
            },
            self.batch_size,
        )

    def _set_seed(self, seed):
        self.gen.manual_seed(int(seed) if seed is not None else 0)


class OneHotEnv(EnvBase):
    """One-hot actions over ``n`` choices: the observation is the last action (float), reward its index."""

    def __init__(self, n: int = 3, batch_size=()):
        super().__init__(batch_size=batch_size)
        bs = self.batch_size
        self.n = n
        self.observation_spec = Composite(observation=Unbounded((*bs, n)), shape=bs)
        self.action_spec = OneHot(n, (*bs, n))
        self.reward_spec = Unbounded((*bs, 1))
        self.full_done_spec = _done_spec(bs)

    def _reset(self, tensordict):
        out = TensorDict({"observation": torch.zeros(*self.batch_size, self.n)}, self.batch_size)
        out.update(_done_spec(self.batch_size).zero())
        return out

    def _step(self, tensordict):
        action = tensordict.get("action")
        if action.shape[-1] != self.n or not ((action.sum(-1) == 1).all()):
            raise ValueError(f"OneHotEnv expects one-hot actions of width {self.n}, got {action}")
        out = TensorDict({"observation": action.float(), "reward": action.long().argmax(-1, keepdim=True).float()},
                         self.batch_size)
        out.update(_done_spec(self.batch_size).zero())
        return out

    def _set_seed(self, seed):
        pass  # deterministic
