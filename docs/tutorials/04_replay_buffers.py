"""Replay buffers: uniform, prioritized and trajectory slices

A replay buffer is a storage, a writer and a sampler. This tutorial fills buffers with collected
CartPole data and samples them three ways: uniformly, by priority, and as slices of trajectories.
"""

# %%
# ## Data to store
# A `Collector` yields batches of transitions; `("collector", "traj_ids")` says which trajectory each
# step belongs to, which the slice samplers use below.
import os

import torch

from tdrl.collectors import Collector
from tdrl.data import (
    LazyTensorStorage,
    ReplayBuffer,
    SliceSampler,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
)
from tdrl.envs import GymEnv

TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"
FRAMES = 200 if TINY else 2000
torch.manual_seed(0)

env = GymEnv("CartPole-v1")
env.set_seed(0)
collector = Collector(env, None, frames_per_batch=FRAMES, total_frames=FRAMES)  # None: random actions
data = next(iter(collector))
collector.shutdown()
print(data.batch_size, "frames,", data["collector", "traj_ids"].unique().numel(), "trajectories")

# %%
# ## Uniform sampling
# `LazyTensorStorage` allocates its tensors from the first write; a `TensorDictReplayBuffer` returns
# TensorDicts and writes the storage index of each sampled item under `"index"`.
rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10_000), batch_size=32)
rb.extend(data)
batch = rb.sample()
print(len(rb), batch.batch_size, batch["index"][:8])

# %%
# ## Prioritized sampling
# Items are drawn with probability proportional to `priority ** alpha`; `"priority_weight"` holds the
# importance weights (`beta`) a loss multiplies its errors by. New items get the largest priority seen so
# far; after computing errors for a batch (here made up), write them back with
# `update_tensordict_priority`.
prb = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(10_000), batch_size=32)
prb.extend(data)
prb.update_priority(torch.arange(len(prb)), torch.full((len(prb),), 0.01))  # every item: a small error
batch = prb.sample()
batch["td_error"] = torch.full((32,), 0.01)
batch["td_error"][:4] = 10.0                       # four items with a large error...
prb.update_tensordict_priority(batch)
hot = set(batch["index"][:4].tolist())
draws = torch.cat([prb.sample()["index"] for _ in range(20)])
share = sum(int(i) in hot for i in draws.tolist()) / draws.numel()
print(f"...are now {share:.0%} of the draws ({len(hot)} of {len(prb)} items)")
print("importance weights in a batch (the hot items get the small ones):", prb.sample()["priority_weight"].unique())

# %%
# ## Slices of trajectories
# `SliceSampler` draws contiguous pieces of `slice_len` steps (`batch_size // slice_len` of them) that
# never cross a trajectory boundary: what recurrent policies and sequence models train on. The sample is
# flat; reshape it to `[num_slices, slice_len]`.
slices = ReplayBuffer(
    storage=LazyTensorStorage(10_000),
    sampler=SliceSampler(slice_len=8, traj_key=("collector", "traj_ids")),
    batch_size=32,
)
slices.extend(data)
seq = slices.sample().reshape(4, 8)
print(seq.batch_size)
print("one trajectory per slice:", (seq["collector", "traj_ids"] == seq["collector", "traj_ids"][:, :1]).all().item())
print("trajectory of each slice:", seq["collector", "traj_ids"][:, 0])
