"""``Collector(trajs_per_batch=...)``: batches of whole trajectories, golden-tested against TorchRL 0.14.1."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, ReplayBuffer
from tdrl.envs import GymEnv, PendulumEnv, SerialEnv

GOLDEN = Path(__file__).parent / "golden" / "trajs_per_batch_torchrl_0_14_1.pt"
# Kept identical to record_trajs_per_batch_golden.SCENARIO.
SCENARIO = {"frames_per_batch": 16, "total_frames": 160, "trajs_per_batch": 3, "max_frames_per_traj": 20, "seed": 0}


class BalancePolicy(torch.nn.Module):
    """CartPole: follow the cart velocity (deterministic): episodes of varied length, as a one-hot action."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        right = (obs[..., 1] > 0).long()
        return torch.nn.functional.one_hot(right, 2)


def _cartpole_collector(traj_format: str, **kwargs) -> Collector:
    env = GymEnv("CartPole-v1")
    env.set_seed(SCENARIO["seed"])
    policy = TensorDictModule(BalancePolicy(), in_keys=["observation"], out_keys=["action"])
    return Collector(
        env, policy, frames_per_batch=SCENARIO["frames_per_batch"], total_frames=SCENARIO["total_frames"],
        trajs_per_batch=SCENARIO["trajs_per_batch"], max_frames_per_traj=SCENARIO["max_frames_per_traj"],
        traj_format=traj_format, auto_register_policy_transforms=False, **kwargs,
    )


@pytest.mark.parametrize("traj_format", ["padded", "cat"])
def test_matches_torchrl_layout(traj_format):
    golden = torch.load(GOLDEN, weights_only=True)[traj_format]
    collector = _cartpole_collector(traj_format)
    batches = list(collector)
    collector.shutdown()
    assert [list(b.shape) for b in batches] == [g["shape"] for g in golden]
    for batch, ref in zip(batches, golden):
        for name, expected in ref.items():
            if name == "shape":
                continue
            key = tuple(name.split("/")) if "/" in name else name
            torch.testing.assert_close(batch.get(key), expected, msg=lambda m, name=name: f"{name}: {m}")


def test_padded_rows_are_whole_trajectories_on_batched_env():
    env = SerialEnv(2, PendulumEnv)
    collector = Collector(env, frames_per_batch=14, total_frames=140, trajs_per_batch=3, max_frames_per_traj=9,
                          traj_format="padded")
    seen = []
    for batch in collector:
        assert batch.shape == (3, 9)
        mask = batch["collector", "mask"]
        lengths = mask.sum(-1)
        assert (lengths == 9).all()  # every trajectory truncated by the StepCounter: none cut by a batch edge
        ids = batch["collector", "traj_ids"]
        assert (ids == ids[:, :1]).all()
        assert batch["next", "done"][..., -1, 0].all() and not batch["next", "done"][..., :-1, 0].any()
        torch.testing.assert_close(batch["next", "th"][:, :-1], batch["th"][:, 1:])
        seen += ids[:, 0].tolist()
    collector.shutdown()
    assert len(seen) == len(set(seen)) >= 9


def test_padding_is_zero_and_masked():
    collector = _cartpole_collector("padded")
    batch = next(iter(collector))
    collector.shutdown()
    mask = batch["collector", "mask"]
    assert not mask.all(), "the scenario has trajectories of different lengths"
    assert (batch["observation"][~mask] == 0).all()
    assert (batch["next", "done"][mask].sum() == 3)


def test_replay_buffer_gets_flat_trajectories():
    rb = ReplayBuffer(storage=LazyTensorStorage(1000))
    calls = []
    extend = rb.extend
    rb.extend = lambda data: calls.append(data.shape) or extend(data)  # type: ignore[method-assign]
    collector = _cartpole_collector("padded", replay_buffer=rb, trajs_per_write=1)
    outputs = list(collector)
    collector.shutdown()
    assert all(out is None for out in outputs)
    assert len(rb) == sum(shape[0] for shape in calls) and len(calls) >= 15
    stored = rb[:]
    ends = stored["next", "done"].reshape(-1).nonzero().reshape(-1)
    assert ends[-1] == len(rb) - 1  # nothing in flight was written
    ids = stored["collector", "traj_ids"]
    assert (ids[1:] >= ids[:-1]).all()


def test_reset_at_each_iter_discards_cut_episodes():
    collector = Collector(PendulumEnv(), frames_per_batch=30, total_frames=120, trajs_per_batch=1,
                          max_frames_per_traj=20, reset_at_each_iter=True, traj_format="cat")
    batches = list(collector)
    collector.shutdown()
    # each 30-step batch completes one 20-step episode; the 10 steps of the next are cut by the reset and dropped
    assert [b.shape for b in batches] == [torch.Size([20])] * 4
    assert len(collector._traj_assembler.partial) == 0


def test_reset_flushes_pending_trajectories():
    collector = Collector(PendulumEnv(), frames_per_batch=50, total_frames=-1, trajs_per_batch=4,
                          max_frames_per_traj=20, traj_format="padded")
    it = iter(collector)
    next(it)  # 4 trajectories out of 5 complete after two batches: one queued
    assert len(collector._traj_assembler.complete) + len(collector._traj_assembler.partial) > 0
    collector.reset()
    assert not collector._traj_assembler.complete and not collector._traj_assembler.partial
    collector.shutdown()


def test_traj_format_default_warns_and_bad_values_raise():
    with pytest.warns(FutureWarning, match="traj_format"):
        Collector(PendulumEnv(), frames_per_batch=10, trajs_per_batch=2).shutdown()
    with pytest.raises(ValueError, match="traj_format must be 'padded' or 'cat', got 'flat'"):
        Collector(PendulumEnv(), frames_per_batch=10, trajs_per_batch=2, traj_format="flat")
    with pytest.raises(ValueError, match="only applies with trajs_per_batch"):
        Collector(PendulumEnv(), frames_per_batch=10, traj_format="cat")
    with pytest.raises(ValueError, match="trajs_per_batch must be a positive int"):
        Collector(PendulumEnv(), frames_per_batch=10, trajs_per_batch=0, traj_format="cat")
    with pytest.raises(ValueError, match="split_trajs=False"):
        Collector(PendulumEnv(), frames_per_batch=10, trajs_per_batch=2, traj_format="cat", split_trajs=True)


def test_missing_traj_ids_is_a_clear_error():
    from tdrl.collectors._trajectories import TrajectoryAssembler

    with pytest.raises(KeyError, match="traj_ids"):
        TrajectoryAssembler().ingest(TensorDict({"next": {"done": torch.zeros(3, 1, dtype=torch.bool)}}, [3]))
