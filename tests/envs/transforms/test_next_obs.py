"""NextObservationDelta (env side and replay-buffer side) and NextStateReconstructor."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.collectors import SyncDataCollector
from tdrl.data import LazyTensorStorage, ReplayBuffer
from tdrl.data.replay_buffers.samplers import SliceSampler
from tdrl.envs import SerialEnv, TransformedEnv
from tdrl.envs.transforms import NextObservationDelta, NextStateReconstructor
from tdrl.envs.utils import check_env_specs

from ._contract import TransformContract
from ._envs import VectorEnv


def test_delta_env_side_drops_full_next_obs_and_keeps_root_precision():
    env = TransformedEnv(VectorEnv(), NextObservationDelta())
    # The default in_keys are the floating observations; the int64 step counter "t" is skipped.
    assert sorted(env.transform.in_keys) == ["obs64", "observation", "observation_copy"]
    check_env_specs(env)
    rollout = env.rollout(6)  # one episode (VectorEnv ends after 7 steps)
    nxt = rollout["next"]
    assert "observation" not in nxt.keys() and "t" in nxt.keys()
    assert nxt["delta", "observation"].dtype == torch.float16
    assert rollout["observation"].dtype == torch.float32 and rollout["obs64"].dtype == torch.float64
    rebuilt = NextObservationDelta(in_keys=["observation", "obs64"])(rollout.clone())
    assert list(rebuilt["next", "delta"].keys()) == ["observation_copy"]  # only the rebuilt deltas are dropped
    # Within a trajectory, next obs of step i is the root obs of step i + 1 (up to float16 precision).
    torch.testing.assert_close(rebuilt["next", "observation"][:-1], rollout["observation"][1:], atol=2e-3, rtol=1e-3)
    assert rebuilt["next", "obs64"].dtype == torch.float64


def test_delta_step_and_maybe_reset_and_batched_parent():
    env = TransformedEnv(SerialEnv(2, VectorEnv), NextObservationDelta(in_keys=["observation"]))
    try:
        td = env.rand_action(env.reset())
        data, td_ = env.step_and_maybe_reset(td)
        assert ("next", "observation") not in data.keys(True, True)
        assert td_["observation"].dtype == torch.float32
        assert data["next", "delta", "observation"].shape == (2, 3)
    finally:
        env.close()


def test_delta_rb_side_restore_dtype_and_keep_delta():
    data = TensorDict({"observation": torch.ones(4, 2), ("next", "delta", "observation"): torch.full((4, 2), 0.25)}, [4])
    rb = ReplayBuffer(storage=LazyTensorStorage(10), batch_size=4,
                      transform=NextObservationDelta(["observation"], restore_dtype=torch.float64, drop_delta=False))
    rb.extend(data)
    sample = rb.sample()
    assert sample["next", "observation"].dtype == torch.float64
    assert (sample["next", "observation"] == 1.25).all()
    assert ("next", "delta", "observation") in sample.keys(True, True)


def test_delta_rejects_bad_dtypes():
    with pytest.raises(ValueError, match="delta_dtype"):
        NextObservationDelta(delta_dtype=torch.int32)
    with pytest.raises(ValueError, match="restore_dtype"):
        NextObservationDelta(restore_dtype="float")


def _flat_batch():
    return TensorDict({
        "observation": torch.arange(8.0).unsqueeze(-1),
        ("next", "done"): torch.tensor([False, False, True, False, False, False, False, False]).unsqueeze(-1),
        ("collector", "traj_ids"): torch.tensor([0, 0, 0, 1, 1, 2, 2, 2]),
        "step_count": torch.tensor([0, 1, 2, 0, 1, 0, 5, 6]).unsqueeze(-1),
    }, [8])


def test_reconstructor_boundaries():
    out = NextStateReconstructor()(_flat_batch())["next", "observation"].flatten()
    expected = torch.tensor([1.0, 2.0, float("nan"), 4.0, float("nan"), 6.0, 7.0, float("nan")])
    torch.testing.assert_close(out, expected, equal_nan=True)
    out = NextStateReconstructor(step_count_key="step_count", fill_value=-1.0)(_flat_batch())
    assert out["next", "observation"].flatten().tolist() == [1.0, 2.0, -1.0, 4.0, -1.0, -1.0, 7.0, -1.0]
    out = NextStateReconstructor(traj_key=None, done_key=None)(_flat_batch())
    assert out["next", "observation"].flatten()[:-1].tolist() == list(range(1, 8))


def test_reconstructor_errors():
    batch = _flat_batch().exclude(("collector", "traj_ids"))
    with pytest.raises(KeyError, match="traj_ids"):
        NextStateReconstructor()(batch)
    NextStateReconstructor(strict=False)(batch)  # the check is skipped
    with pytest.raises(ValueError, match="flat"):
        NextStateReconstructor()(_flat_batch().reshape(2, 4))
    ints = TensorDict({"observation": torch.arange(3).unsqueeze(-1)}, [3])
    with pytest.raises(TypeError, match="integer fill_value"):
        NextStateReconstructor(traj_key=None, done_key=None)(ints)
    out = NextStateReconstructor(traj_key=None, done_key=None, fill_value=0)(ints)
    assert out["next", "observation"].flatten().tolist() == [1, 2, 0]


def test_delta_through_a_collector_and_replay_buffer():
    """The delta path of TorchRL's memory-efficient RL tutorial: collect, store, sample, rebuild."""
    collector = SyncDataCollector(create_env_fn=lambda: TransformedEnv(VectorEnv(), NextObservationDelta()),
                                  frames_per_batch=40, total_frames=40)
    data = next(iter(collector))
    collector.shutdown()
    assert ("next", "observation") not in data.keys(True, True)
    assert data["next", "delta", "observation"].dtype == torch.float16
    rb = ReplayBuffer(storage=LazyTensorStorage(40), batch_size=20,
                      sampler=SliceSampler(slice_len=5, traj_key=("collector", "traj_ids")),
                      transform=NextObservationDelta(in_keys=["observation"]))
    rb.extend(data)
    sample = rb.sample()
    assert torch.isfinite(sample["next", "observation"]).all()
    assert ("next", "delta", "observation") not in sample.keys(True, True)


class TestNextObservationDeltaContract(TransformContract):
    next_dropped = ("observation",)  # stored as ("next", "delta", "observation") instead
    in_workers = False  # documented: place it outside batched envs (they expect the full next obs)

    def make_transform(self):
        return NextObservationDelta(in_keys=["observation"])

    def check(self, rollout, setting):
        delta = rollout["next", "delta", "observation"]
        assert delta.dtype == torch.float16 and ("next", "observation") not in rollout.keys(True, True)
        rebuilt = NextObservationDelta(in_keys=["observation"])(rollout.clone())
        # Each step's rebuilt next observation is the following step's root one (within an episode).
        same_episode = ~rollout["next", "done"][..., :-1, :].squeeze(-1)
        nxt, root = rebuilt["next", "observation"][..., :-1, :], rollout["observation"][..., 1:, :]
        torch.testing.assert_close(nxt[same_episode], root[same_episode], atol=2e-3, rtol=1e-3)

    def check_plain(self, data, out):
        # Plain data without a delta entry has nothing to rebuild: the full next observation is untouched.
        torch.testing.assert_close(out["next", "observation"], data["next", "observation"])


class TestNextStateReconstructorContract(TransformContract):
    def make_transform(self):
        return NextStateReconstructor(traj_key=None)

    def check(self, rollout, setting):
        # In an env it maps nothing: the env's own next observations pass through.
        same_episode = ~rollout["next", "done"][..., :-1, :].squeeze(-1)
        nxt, root = rollout["next", "observation"][..., :-1, :], rollout["observation"][..., 1:, :]
        assert same_episode.any()
        torch.testing.assert_close(nxt[same_episode], root[same_episode])

    def check_plain(self, data, out):
        nxt = out["next", "observation"]
        done = data["next", "done"].squeeze(-1)
        keep = torch.cat([~done[:-1], torch.zeros(1, dtype=torch.bool)])
        torch.testing.assert_close(nxt[keep], data["next", "observation"][keep])
        assert torch.isnan(nxt[~keep]).all() and (~keep).sum() >= 1
