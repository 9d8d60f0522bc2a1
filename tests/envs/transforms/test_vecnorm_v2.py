"""VecNormV2: the contract and its state handling (values are checked against TorchRL in
test_golden_torchrl.py)."""

from __future__ import annotations

import pickle

import pytest
import torch
from tensordict import TensorDict

from tdrl.envs import ObservationNorm, TransformedEnv
from tdrl.envs.transforms import VecNormV2

from ._contract import TransformContract
from ._envs import VectorEnv


class TestVecNormV2(TransformContract):
    def make_transform(self):
        return VecNormV2(in_keys=["observation", "reward"], out_keys=["obs_norm", "reward_norm"], decay=0.9)

    def check(self, rollout, setting):
        norm = rollout["next", "obs_norm"]
        assert torch.isfinite(norm).all() and not torch.allclose(norm, rollout["next", "observation"])
        assert "reward_norm" not in rollout.keys() and torch.isfinite(rollout["next", "reward_norm"]).all()

    def plain_transform(self):
        torch.manual_seed(0)  # the same statistics on every call
        env = TransformedEnv(VectorEnv(), VecNormV2(in_keys=["observation"], decay=0.9))
        env.rollout(5)
        return env.transform.clone()

    def check_plain(self, data, out):
        t = self.plain_transform()
        loc, scale = t.loc["observation"], t.scale["observation"]
        torch.testing.assert_close(out["observation"], (data["observation"] - loc) / scale)


def _fitted(**kwargs):
    env = TransformedEnv(VectorEnv(), VecNormV2(in_keys=["observation"], **kwargs))
    env.set_seed(0)
    env.rollout(10)
    return env


def test_plain_mean_when_decay_is_one():
    env = TransformedEnv(VectorEnv(), VecNormV2(in_keys=["observation"], decay=1.0, eps=1e-8))
    env.set_seed(0)
    rollout = env.rollout(6, break_when_any_done=False)
    raw = torch.cat([rollout["observation_copy"][:1], rollout["next", "observation_copy"]])
    torch.testing.assert_close(env.transform.loc["observation"], raw.mean(0))
    torch.testing.assert_close(env.transform.scale["observation"], raw.std(0, unbiased=False))
    assert int(env.transform._count["observation"]) == 7


def test_freeze_denorm_and_observation_norm():
    env = _fitted(decay=0.9)
    t = env.transform
    frozen = t.frozen_copy()
    loc = frozen.loc["observation"].clone()
    env.rollout(5)
    assert not torch.allclose(t.loc["observation"], loc)
    data = TensorDict(observation=torch.randn(4, 3), batch_size=[4])
    normed = frozen(data.clone())
    torch.testing.assert_close(frozen.denorm(normed)["observation"], data["observation"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(frozen.loc["observation"], loc)
    obs_norm = frozen.to_observation_norm()
    assert isinstance(obs_norm, ObservationNorm)
    torch.testing.assert_close(obs_norm(data.clone())["observation"], normed["observation"])


def test_state_dict_and_pickle_round_trip():
    t = _fitted(decay=0.99).transform
    fresh = VecNormV2(in_keys=["observation"], decay=0.99)
    fresh.load_state_dict(t.state_dict())
    torch.testing.assert_close(fresh.scale["observation"], t.scale["observation"])
    again = pickle.loads(pickle.dumps(t))
    torch.testing.assert_close(again.loc["observation"], t.loc["observation"])
    shared = VecNormV2(in_keys=["observation"], shared_data=TensorDict(loc=t._loc, var=t._var, count=t._count))
    assert shared._loc is t._loc


def test_reduce_batch_dims_pools_the_batch():
    env = TransformedEnv(VectorEnv(batch_size=(4,)), VecNormV2(in_keys=["observation"], decay=1.0,
                                                               reduce_batch_dims=True))
    rollout = env.rollout(3)
    raw = torch.cat([rollout["observation_copy"][:, :1], rollout["next", "observation_copy"]], 1)
    assert env.transform.loc["observation"].shape == (3,)
    torch.testing.assert_close(env.transform.loc["observation"], raw.reshape(-1, 3).mean(0))


def test_errors():
    with pytest.raises(ValueError, match="stateful=True"):
        VecNormV2(in_keys=["observation"], stateful=False)
    with pytest.raises(ValueError, match="decay"):
        VecNormV2(in_keys=["observation"], decay=0.0)
    with pytest.raises(RuntimeError, match="no statistics"):
        VecNormV2(in_keys=["observation"])(TensorDict(observation=torch.zeros(3)))
