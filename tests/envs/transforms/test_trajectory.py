"""TrajCounter and RandomCropTensorDict."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.envs import SerialEnv, TransformedEnv
from tdrl.envs.transforms import (
    Compose,
    RandomCropTensorDict,
    RandomTruncationTransform,
    StepCounter,
    TrajCounter,
)

from ._contract import TransformContract
from ._envs import VectorEnv


class TestTrajCounter(TransformContract):
    has_plain = False

    def make_transform(self):
        return TrajCounter()

    def check(self, rollout, setting):
        ids, nxt = rollout["traj_count"], rollout["next", "traj_count"]
        assert torch.equal(ids, nxt)
        done = rollout["next", "done"]
        # the id changes exactly after each done, and only grows
        changes = (ids[..., 1:, :] != ids[..., :-1, :])
        assert torch.equal(changes, done[..., :-1, :])
        assert (ids[..., 1:, :] >= ids[..., :-1, :]).all()


def test_traj_counter_matches_torchrl_on_a_batched_env():
    # Recorded on TorchRL 0.14.1: TransformedEnv(SerialEnv(2, Pendulum), StepCounter(2)) + TrajCounter(),
    # rollout(7): [[0, 0, 2, 2, 4, 4, 6], [1, 1, 3, 3, 5, 5, 7]], then a second rollout(3) starts at 8, 9.
    env = TransformedEnv(SerialEnv(2, lambda: VectorEnv(episode_len=100)), Compose(StepCounter(2), TrajCounter()))
    r = env.rollout(7, break_when_any_done=False)
    assert r["traj_count"].squeeze(-1).tolist() == [[0, 0, 2, 2, 4, 4, 6], [1, 1, 3, 3, 5, 5, 7]]
    r = env.rollout(3, break_when_any_done=False)
    assert r["traj_count"].squeeze(-1).tolist() == [[8, 8, 10], [9, 9, 11]]
    env.close()


def test_random_crop_windows_are_contiguous_and_cover_every_start():
    torch.manual_seed(0)
    data = TensorDict({"obs": torch.arange(20.0).view(2, 10), "nested": {"x": torch.arange(20).view(2, 10, 1)}},
                      [2, 10])
    starts = set()
    for _ in range(200):
        out = RandomCropTensorDict(4)(data)
        assert out.batch_size == (2, 4)
        assert (out["obs"].diff(dim=-1) == 1).all()
        assert torch.equal(out["nested", "x"].squeeze(-1).float(), out["obs"])
        starts.add(int(out["obs"][0, 0]))
    assert starts == set(range(7))  # every window start in [0, T - L], the last one included
    full = RandomCropTensorDict(10)(data)
    assert torch.equal(full["obs"], data["obs"])


def test_random_crop_with_mask_and_sample_dim():
    torch.manual_seed(0)
    mask = torch.tensor([[True] * 10, [True] * 4 + [False] * 6])
    data = TensorDict({"obs": torch.arange(20.0).view(2, 10), "mask": mask}, [2, 10])
    for _ in range(100):
        out = RandomCropTensorDict(3, mask_key="mask")(data)
        assert out["mask"].all()  # windows stay inside the valid steps
    tdim0 = TensorDict({"obs": torch.arange(20.0).view(10, 2)}, [10, 2])
    assert RandomCropTensorDict(3, sample_dim=0)(tdim0).batch_size == (3, 2)
    with pytest.raises(RuntimeError, match="valid steps"):
        RandomCropTensorDict(5, mask_key="mask")(data)
    with pytest.raises(RuntimeError, match="windows of 11"):
        RandomCropTensorDict(11)(data)
    with pytest.raises(ValueError, match="expected the data's shape"):
        RandomCropTensorDict(2, mask_key="m")(data.set("m", torch.ones(2, 10, 1, dtype=torch.bool)))
    with pytest.raises(RuntimeError, match="empty batch size"):
        RandomCropTensorDict(2)(TensorDict({"a": torch.zeros(3)}, []))


def test_random_crop_in_a_replay_buffer():
    from tdrl.data import LazyTensorStorage, ReplayBuffer

    rb = ReplayBuffer(storage=LazyTensorStorage(4), transform=RandomCropTensorDict(5), batch_size=2)
    rb.extend(TensorDict({"obs": torch.arange(40.0).view(4, 10)}, [4, 10]))
    assert rb.sample().batch_size == (2, 5)


class TestRandomTruncationTransform(TransformContract):
    has_plain = False

    def make_transform(self):
        return Compose(StepCounter(), RandomTruncationTransform(2, 4, prob=1.0))

    def check(self, rollout, setting):
        count = rollout["next", "step_count"]
        truncated = rollout["next", "truncated"]
        assert (count[truncated] <= 4).all()
        # no episode outlives the largest horizon (the env itself terminates after 7 steps)
        assert count.max() <= 4


def test_random_truncation_horizons_follow_the_episode_schedule():
    torch.manual_seed(0)
    t = RandomTruncationTransform(3, 6, prob=0.0, first_episode_prob=1.0)
    episodes = torch.tensor([0] * 500 + [1] * 500 + [2] * 500)
    h = t._draw(episodes)
    assert set(h[:500].tolist()) == set(range(1, 7))  # first episode: spread over {1..max}
    assert set(h[500:1000].tolist()) == set(range(3, 7))  # second: first_episode_prob=1 -> {min..max}
    assert set(h[1000:].tolist()) == {6}  # later: prob=0 -> max_horizon
    with pytest.raises(ValueError, match="min_horizon"):
        RandomTruncationTransform(5, 3)
    with pytest.raises(ValueError, match="prob"):
        RandomTruncationTransform(1, 3, prob=1.5)


def test_random_truncation_on_a_batched_env_spreads_resets():
    torch.manual_seed(0)
    env = TransformedEnv(SerialEnv(4, lambda: VectorEnv(episode_len=100)),
                         Compose(StepCounter(), RandomTruncationTransform(5, 10, prob=0.5)))
    r = env.rollout(40, break_when_any_done=False)
    ends = r["next", "truncated"].squeeze(-1)
    assert ends.any(dim=-1).all() and not torch.equal(ends[0], ends[1])  # every env truncates, not in lockstep
    assert r["next", "step_count"].max() <= 10
    env.close()
    with pytest.raises(KeyError, match="StepCounter"):
        TransformedEnv(VectorEnv(), RandomTruncationTransform(1, 3)).reset()
