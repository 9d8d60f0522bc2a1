"""Small deterministic environments for the env tests."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from tdrl.data import Bounded, Categorical, Composite, Unbounded
from tdrl.envs import EnvBase


class CountingEnv(EnvBase):
    """Batched counter: ``obs`` counts steps since reset; terminates at ``max_steps`` (per sub-env).

    ``max_steps`` may be a tensor with one limit per sub-env. Truncation never happens.
    """

    def __init__(self, batch_size=(), max_steps=5, **kwargs):
        super().__init__(batch_size=batch_size, **kwargs)
        self.max_steps = torch.as_tensor(max_steps).expand(self.batch_size).reshape(*self.batch_size, 1)
        self.observation_spec = Composite(obs=Unbounded((*self.batch_size, 1)), shape=self.batch_size)
        self.action_spec = Bounded(-1.0, 1.0, shape=(*self.batch_size, 1))
        self.reward_spec = Unbounded((*self.batch_size, 1))
        self.full_done_spec = Composite(
            done=Categorical(2, (*self.batch_size, 1), dtype=torch.bool),
            terminated=Categorical(2, (*self.batch_size, 1), dtype=torch.bool),
            truncated=Categorical(2, (*self.batch_size, 1), dtype=torch.bool),
            shape=self.batch_size,
        )
        self.count = torch.zeros(*self.batch_size, 1)
        self.seed = None
        self.resets = 0

    def _reset(self, tensordict, **kwargs):
        mask = None if tensordict is None else tensordict.get("_reset", None)
        if mask is None:
            self.count = torch.zeros_like(self.count)
        else:
            self.count = torch.where(mask, torch.zeros_like(self.count), self.count)
        self.resets += 1
        return TensorDict({"obs": self.count.clone()}, self.batch_size)

    def _step(self, tensordict):
        self.count = self.count + 1
        terminated = self.count >= self.max_steps
        return TensorDict(
            {
                "obs": self.count.clone(),
                "reward": tensordict["action"].clone(),
                "done": terminated.clone(),
                "terminated": terminated,
                "truncated": torch.zeros_like(terminated),
            },
            self.batch_size,
        )

    def _set_seed(self, seed):
        self.seed = seed
