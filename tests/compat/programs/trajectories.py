"""Trajectory handling: split_trajs, SliceSampler on collected data, ObservationNorm(standard_normal), primers."""

import torch

from tdrl.collectors import Collector
from tdrl.collectors.utils import split_trajectories
from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer, Unbounded
from tdrl.data.replay_buffers import SliceSampler
from tdrl.envs import (
    GymEnv,
    ObservationNorm,
    SerialEnv,
    StepCounter,
    TensorDictPrimer,
    TransformedEnv,
)
from tdrl.envs.utils import ExplorationType

torch.manual_seed(0)


def make_env():
    env = TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(max_steps=7))
    env.append_transform(ObservationNorm(in_keys=["observation"], standard_normal=True))
    env.transform[-1].init_stats(num_iter=20, reduce_dim=0, cat_dim=0)
    env.append_transform(TensorDictPrimer(extra=Unbounded(shape=(2,)), default_value=0.0))
    return env


env = make_env()
env.set_seed(0)
td = env.reset()
assert td["extra"].shape == (2,)
r = env.rollout(5)
assert r["extra"].shape == (5, 2)

collector = Collector(make_env, None, frames_per_batch=20, total_frames=20, split_trajs=True)
data = next(iter(collector))
collector.shutdown()
# 20 frames, trajectories of 7 -> 3 trajectories padded to length 7
assert data.shape == (3, 7), data.shape
assert data["collector", "mask"].sum().item() == 20
assert data["collector", "mask"].dtype == torch.bool

collector = Collector(
    SerialEnv(2, make_env),
    None,
    frames_per_batch=40,
    total_frames=40,
    exploration_type=ExplorationType.RANDOM,
)
data = next(iter(collector))
collector.shutdown()
assert data.shape == (2, 20)
split = split_trajectories(data)
assert split.shape[-1] == 7
assert split["collector", "mask"].sum().item() == 40

rb = TensorDictReplayBuffer(
    storage=LazyTensorStorage(100, ndim=2),
    sampler=SliceSampler(num_slices=4, traj_key=("collector", "traj_ids"), strict_length=False),
    batch_size=12,
)
rb.extend(data)
assert len(rb) == 40
s = rb.sample()
assert s.shape == (12,)
ids = s["collector", "traj_ids"]
# a slice never crosses a trajectory boundary: step counts increase by one within a trajectory
same = ids[1:] == ids[:-1]
steps = s["step_count"].squeeze(-1)
assert ((steps[1:] - steps[:-1])[same] == 1).all()
print("OK trajectories")
