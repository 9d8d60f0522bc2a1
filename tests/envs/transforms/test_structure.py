"""RemoveEmptySpecs."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from tdrl.data import Categorical, Composite, Unbounded
from tdrl.envs import EnvBase, TransformedEnv
from tdrl.envs.transforms import RemoveEmptySpecs
from tdrl.envs.utils import check_env_specs

from ._contract import TransformContract


class _EmptyEntriesEnv(EnvBase):
    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(observation=Unbounded((3,)),
                                          other=Composite(another=Composite()))
        self.action_spec = Unbounded((3,))
        self.full_done_spec = Composite(done=Categorical(2, (1,), dtype=torch.bool),
                                        terminated=Categorical(2, (1,), dtype=torch.bool))
        self.full_reward_spec = Composite(reward=Unbounded((1,)), other_reward=Composite())

    def _reset(self, tensordict, **kwargs):
        return self.observation_spec.rand().update(self.full_done_spec.zero())

    def _step(self, tensordict):
        out = self.observation_spec.rand().update(self.full_done_spec.zero())
        return out.update(self.full_reward_spec.rand())

    def _set_seed(self, seed):
        pass


class TestRemoveEmptySpecs(TransformContract):
    def make_transform(self):
        return RemoveEmptySpecs()

    def check(self, rollout, setting):
        assert "observation" in rollout["next"].keys()


def test_removes_empty_specs_and_entries_like_torchrl():
    env = TransformedEnv(_EmptyEntriesEnv(), RemoveEmptySpecs())
    # TorchRL 0.14.1 on the same env: observation spec keys ['observation'], reward spec keys ['reward']
    assert list(env.observation_spec.keys(True)) == ["observation"]
    assert list(env.full_reward_spec.keys(True)) == ["reward"]
    r = env.rollout(2)
    assert sorted(map(str, r.keys(True, True))) == sorted(
        ["('next', 'done')", "('next', 'observation')", "('next', 'reward')", "('next', 'terminated')", "action",
         "done", "observation", "terminated"])
    check_env_specs(env)
    out = RemoveEmptySpecs()(TensorDict({"other": {}, "x": torch.zeros(2)}, []))
    assert list(out.keys()) == ["x"]
