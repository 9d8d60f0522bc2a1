"""ActionScaling and FlattenAction: env use (through the contract), plain data and errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import Bounded, Categorical, Composite, Unbounded
from tdrl.envs import EnvBase, TransformedEnv
from tdrl.envs.transforms import ActionScaling, FlattenAction
from tdrl.envs.utils import check_env_specs

from ._contract import TransformContract
from ._envs import VectorEnv


class TestActionScaling(TransformContract):
    def make_transform(self):
        return ActionScaling(loc=torch.tensor([0.5, 0.5], dtype=torch.float64), scale=0.5, standard_normal=False)

    def check(self, rollout, setting):
        # The outer box [-1, 1] becomes [1.5, 2.5] (unit box) -> the env clips nothing, actions stay float64.
        assert rollout["action"].dtype == torch.float64

    def check_plain(self, data, out):
        torch.testing.assert_close(out["action"], (data["action"] - 0.5) / 0.5 / 2 + 0.5)

    def check_inv(self, transform):
        inv = transform.inv(TensorDict(action=torch.tensor([0.0, 1.0], dtype=torch.float64)))
        assert inv["action"].tolist() == [0.0, 1.0]


def test_action_scaling_from_spec_round_trip():
    env = TransformedEnv(VectorEnv(), ActionScaling())
    assert env.action_spec.space.low.tolist() == [-1.0, -1.0]
    check_env_specs(env)
    t = env.transform
    action = torch.tensor([0.3, -0.7], dtype=torch.float64)
    torch.testing.assert_close(t.normalize(t.denormalize(action)), action)


def test_action_scaling_errors():
    with pytest.raises(ValueError, match="one action entry"):
        ActionScaling(in_keys_inv=["a", "b"])
    with pytest.raises(ValueError, match="together"):
        ActionScaling(loc=0.0)
    with pytest.raises(ValueError, match="zero entries"):
        ActionScaling(loc=0.0, scale=torch.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match="forward only"):
        ActionScaling(in_keys_inv=[])
    with pytest.raises(RuntimeError, match="not initialised"):
        ActionScaling()(TensorDict(action=torch.zeros(2)))
    with pytest.raises(RuntimeError, match="finitely bounded"):
        ActionScaling().transform_action_spec(Unbounded((2,)))
    with pytest.raises(ValueError, match="exactly one"):
        ActionScaling.from_stats(mean=torch.zeros(2), std=torch.ones(2), low=torch.zeros(2), high=torch.ones(2))
    with pytest.raises(ValueError, match="does not match"):
        ActionScaling(loc=torch.zeros(3), scale=1.0)(TensorDict(action=torch.zeros(2)))


class GridActionEnv(EnvBase):
    """Actions of shape (2, 3); the observation is the action summed over its first dim."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(observation=Unbounded((3,)))
        self.action_spec = Bounded(-torch.ones(2, 3), torch.ones(2, 3), (2, 3))
        self.reward_spec = Unbounded((1,))

    def _reset(self, td):
        return TensorDict(observation=torch.zeros(3), done=torch.zeros(1, dtype=torch.bool),
                          terminated=torch.zeros(1, dtype=torch.bool))

    def _step(self, td):
        action = td["action"]
        assert action.shape == (2, 3), action.shape
        return TensorDict(observation=action.sum(0), reward=action.sum().reshape(1), done=torch.zeros(1, dtype=torch.bool),
                          terminated=torch.zeros(1, dtype=torch.bool))

    def _set_seed(self, seed):
        pass


def test_flatten_action_in_env():
    env = TransformedEnv(GridActionEnv(), FlattenAction())
    assert env.action_spec.shape == (6,) and env.action_spec.space.high.shape == (6,)
    check_env_specs(env)
    td = env.reset().set("action", torch.arange(6.0) / 10)
    out = env.step(td)
    torch.testing.assert_close(out["next", "observation"], torch.tensor([0.3, 0.5, 0.7]))
    assert out["action"].shape == (6,)


def test_flatten_action_unbounded_leaf_and_errors():
    flat = FlattenAction(first_dim=-3, last_dim=-2)
    spec = flat.transform_action_spec(Categorical(4, (2, 3, 5)))
    assert spec.shape == (6, 5)
    with pytest.raises(ValueError, match="negative"):
        FlattenAction(first_dim=0)
    with pytest.raises(ValueError, match="<="):
        FlattenAction(first_dim=-1, last_dim=-2)
    with pytest.raises(RuntimeError, match="no unflatten shape"):
        FlattenAction().inv(TensorDict(action=torch.zeros(6)))
    with pytest.raises(RuntimeError, match="does not fit"):
        FlattenAction(first_dim=-3).transform_action_spec(Unbounded((2,)))
