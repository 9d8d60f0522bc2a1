"""SignTransform, BinarizeReward, LineariseRewards, PermuteTransform: the contract and their maths."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import Binary, Bounded
from tdrl.envs.transforms import BinarizeReward, LineariseRewards, PermuteTransform, SignTransform

from ._contract import TransformContract


class TestSignTransform(TransformContract):
    def make_transform(self):
        return SignTransform(in_keys=["observation", "reward"], out_keys=["obs_sign", "reward"])

    def check(self, rollout, setting):
        assert torch.equal(rollout["next", "obs_sign"], rollout["next", "observation"].sign())
        assert set(rollout["next", "reward"].unique().tolist()) <= {-1.0, 0.0, 1.0}

    def plain_transform(self):
        return SignTransform(in_keys=["observation"])

    def check_plain(self, data, out):
        assert torch.equal(out["observation"], data["observation"].sign())


class TestBinarizeReward(TransformContract):
    def make_transform(self):
        return BinarizeReward()

    def check(self, rollout, setting):
        reward = rollout["next", "reward"]
        assert reward.dtype == torch.int8 and set(reward.unique().tolist()) <= {0, 1}
        assert torch.equal(reward.bool(), rollout["next", "observation"][..., :1] > 0)

    def plain_transform(self):
        return BinarizeReward(in_keys=[("next", "reward")])

    def check_plain(self, data, out):
        assert torch.equal(out["next", "reward"], (data["next", "reward"] > 0).to(torch.int8))


class TestLineariseRewards(TransformContract):
    def make_transform(self):
        # The contract env's reward is one-dim: the weighted sum is a scaling.
        return LineariseRewards(in_keys=["reward"], weights=[2.0])

    def check(self, rollout, setting):
        assert torch.allclose(rollout["next", "reward"], 2 * rollout["next", "observation"][..., :1])

    def plain_transform(self):
        return LineariseRewards(in_keys=[("next", "reward")], weights=[2.0])

    def check_plain(self, data, out):
        assert torch.allclose(out["next", "reward"], 2 * data["next", "reward"])


class TestPermuteTransform(TransformContract):
    env_kind = "pixels"

    def make_transform(self):
        return PermuteTransform((-1, -3, -2), in_keys=["pixels"], out_keys=["pixels_chw"])

    def check(self, rollout, setting):
        assert rollout["next", "pixels_chw"].shape[-3:] == (3, 8, 8)
        assert torch.equal(rollout["next", "pixels_chw"], rollout["next", "pixels"].movedim(-1, -3))


def test_sign_inverse_and_specs():
    t = SignTransform(in_keys_inv=["action"])
    out = t.inv(TensorDict({"action": torch.tensor([-0.3, 0.0, 2.0])}, []))
    assert out["action"].tolist() == [-1.0, 0.0, 1.0]
    spec = SignTransform._bounded(Bounded(-5.0, 5.0, (3,)))
    assert float(spec.low.min()) == -1.0 and float(spec.high.max()) == 1.0


def test_binarize_reward_spec_and_shape_check():
    t = BinarizeReward()
    from tdrl.data import Composite, Unbounded

    spec = t.transform_reward_spec(Composite(reward=Unbounded((1,))))
    assert isinstance(spec["reward"], Binary) and spec["reward"].dtype == torch.int8
    with pytest.raises(ValueError, match="trailing singleton"):
        t(TensorDict({"reward": torch.zeros(3)}, [3]))


def test_linearise_rewards_weights_and_bounds():
    td = TensorDict({"reward": torch.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])}, [2])
    out = LineariseRewards(in_keys=["reward"], weights=[1.0, 0.5, 2.0])(td.clone())["reward"]
    assert out.flatten().tolist() == [8.0, 0.5]  # TorchRL 0.14.1 gives the same on these inputs
    assert LineariseRewards(in_keys=["reward"])(td.clone())["reward"].flatten().tolist() == [6.0, 1.0]
    t = LineariseRewards(in_keys=["reward"], weights=[1.0, 2.0])
    leaf = t._scalar_leaf(Bounded(torch.tensor([0.0, -1.0]), torch.tensor([1.0, 1.0]), (2,)))
    assert leaf.shape == (1,) and leaf.low.item() == -2.0 and leaf.high.item() == 3.0
    with pytest.raises(ValueError, match="non-negative"):
        LineariseRewards(in_keys=["reward"], weights=[-1.0])
    with pytest.raises(ValueError, match="2 weights for rewards of size 3"):
        t(td.clone())


def test_permute_inverse_round_trip_and_bad_dims():
    t = PermuteTransform((-1, -3, -2), in_keys=["x"], in_keys_inv=["y"])
    x = torch.randn(2, 4, 5, 3)
    out = t(TensorDict({"x": x}, [2]))
    assert out["x"].shape == (2, 3, 4, 5)
    back = t.inv(TensorDict({"y": out["x"]}, [2]))
    assert torch.equal(back["y"], x)
    with pytest.raises(ValueError, match="permutation"):
        PermuteTransform((-1, -1))
