"""Reward2GoTransform against a plain reference loop (and values recorded on TorchRL 0.14.1)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import LazyTensorStorage, ReplayBuffer
from tdrl.envs import TransformedEnv
from tdrl.envs.transforms import Reward2GoTransform
from tdrl.envs.transforms.returns import reward2go

from ._envs import VectorEnv


def _reference(reward, done, gamma):
    out, running = [], 0.0
    for t in reversed(range(len(reward))):
        running = reward[t] + gamma * running * (0.0 if done[t] else 1.0)
        out.append(running)
    return out[::-1]


def test_reward2go_matches_a_reference_loop():
    torch.manual_seed(0)
    reward = torch.randn(3, 9, 1)
    done = torch.rand(3, 9, 1) < 0.3
    got = reward2go(reward, done, 0.9)
    for b in range(3):
        expected = _reference(reward[b, :, 0].tolist(), done[b, :, 0].tolist(), 0.9)
        assert torch.allclose(got[b, :, 0], torch.tensor(expected), atol=1e-6)


def test_transform_inv_matches_torchrl():
    # Recorded on TorchRL 0.14.1: Reward2GoTransform(0.5).inv on these data gives [1.5, 1.0, 1.5, 1.0].
    done = torch.tensor([[False], [True], [False], [True]])
    data = TensorDict({"next": {"reward": torch.ones(2, 4, 1), "done": done.expand(2, 4, 1).clone()}}, [2, 4])
    t = Reward2GoTransform(gamma=0.5, in_keys=[("next", "reward")], out_keys=["reward_to_go"])
    out = t.inv(data)
    assert out["reward_to_go"][..., 0].tolist() == [[1.5, 1.0, 1.5, 1.0]] * 2
    assert "reward_to_go" not in t(data.clone()).keys()  # forward leaves sampled data alone


def test_in_a_replay_buffer_and_errors():
    rb = ReplayBuffer(storage=LazyTensorStorage(4), transform=Reward2GoTransform(gamma=1.0))
    done = torch.zeros(2, 3, 1, dtype=torch.bool)
    rb.extend(TensorDict({"next": {"reward": torch.ones(2, 3, 1), "done": done}}, [2, 3]))
    assert rb[:]["reward_to_go"][0, :, 0].tolist() == [3.0, 2.0, 1.0]
    with pytest.raises(KeyError, match="done"):
        Reward2GoTransform().inv(TensorDict({"next": {"reward": torch.ones(3, 1)}}, [3]))
    with pytest.raises(ValueError, match="one shape"):
        reward2go(torch.ones(3, 1), torch.zeros(2, 1, dtype=torch.bool), 0.9)
    env = TransformedEnv(VectorEnv(), Reward2GoTransform())
    with pytest.raises(RuntimeError, match="replay buffer"):
        env.rollout(2)
