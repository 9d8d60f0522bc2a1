"""TerminateTransform, SuccessReward and EndOfLifeTransform: contract and errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import Composite
from tdrl.envs import TransformedEnv
from tdrl.envs.transforms import (
    Compose,
    EndOfLifeTransform,
    SuccessReward,
    TerminateTransform,
    UnaryTransform,
)

from ._contract import TransformContract
from ._envs import VectorEnv


class TestTerminateTransform(TransformContract):
    has_plain = False

    def make_transform(self):
        return TerminateTransform(lambda td: td["t"] >= 3)

    def check(self, rollout, setting):
        nxt = rollout["next"]
        assert ((nxt["t"] >= 3) <= nxt["terminated"]).all() and (nxt["terminated"] <= nxt["done"]).all()
        assert not nxt["truncated"].any()
        assert (rollout["t"] <= 3).all()  # the env resets once terminated


def test_terminate_without_done():
    env = TransformedEnv(VectorEnv(), TerminateTransform(lambda td: True, write_done=False))
    td = env.step(env.rand_action(env.reset()))
    assert td["next", "terminated"].all() and not td["next", "done"].any()
    with pytest.raises(ValueError, match="callable"):
        TerminateTransform(None)


class TestSuccessReward(TransformContract):
    def make_transform(self):
        return Compose(UnaryTransform(in_keys=["t"], out_keys=["success"], fn=lambda t: t >= 2), SuccessReward(scale=5.0))

    def check(self, rollout, setting):
        expected = (rollout["next", "t"] >= 2).float() * 5.0
        torch.testing.assert_close(rollout["next", "reward"], expected)

    def plain_transform(self):
        return SuccessReward(success_key=("next", "done"), reward_key=("next", "reward"), scale=2.0)

    def check_plain(self, data, out):
        torch.testing.assert_close(out["next", "reward"], data["next", "done"].float() * 2.0)


def test_success_reward_spec_errors():
    with pytest.raises(RuntimeError, match="cannot infer"):
        SuccessReward(reward_key="other").transform_reward_spec(Composite())
    env = TransformedEnv(VectorEnv(), SuccessReward(success_key="t", scale=-1.0))
    assert env.reward_spec.space.low.tolist() == [-1.0] and env.reward_spec.space.high.tolist() == [0.0]


def test_end_of_life_needs_an_env_and_lives():
    with pytest.raises(RuntimeError, match="attach it"):
        EndOfLifeTransform()(TensorDict(done=torch.zeros(1, dtype=torch.bool)))
    with pytest.raises(AttributeError):
        TransformedEnv(VectorEnv(), EndOfLifeTransform()).reset()


def test_end_of_life_register_keys():
    class Loss:
        def set_keys(self, **kw):
            self.keys = kw

    loss = Loss()
    EndOfLifeTransform(eol_key="eol").register_keys(loss)
    assert loss.keys == {"done": "eol", "terminated": "eol"}
