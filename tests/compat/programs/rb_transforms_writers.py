"""Replay-buffers tutorial style: writers, storage indexing, buffer transforms, RandomSampler, sample info."""

import torch
from tensordict import TensorDict

from tdrl.data import LazyTensorStorage, ReplayBuffer, RoundRobinWriter, TensorDictReplayBuffer, TensorStorage
from tdrl.data.replay_buffers import RandomSampler, SamplerWithoutReplacement
from tdrl.envs import RewardScaling

torch.manual_seed(0)
data = TensorDict({"a": torch.arange(12), ("b", "c"): torch.arange(12).float().unsqueeze(-1)}, [12])

# TensorStorage over existing data
storage = TensorStorage(data.clone())
rb = TensorDictReplayBuffer(storage=storage, sampler=RandomSampler(), batch_size=5)
s = rb.sample()
assert s.batch_size == (5,)
assert (s["b", "c"].squeeze(-1) == s["a"].float()).all()

# RoundRobinWriter overwrites the oldest entries, and the buffer is indexable
rb = ReplayBuffer(storage=LazyTensorStorage(10), writer=RoundRobinWriter(), batch_size=4)
rb.extend(data)
assert len(rb) == 10
stored = rb[:]["a"]
assert sorted(stored.tolist()) == list(range(2, 12))

# a transform applied at sampling time
rb = ReplayBuffer(
    storage=LazyTensorStorage(100), batch_size=4, transform=lambda td: td.set("a2", td["a"] * 2)
)
rb.extend(data)
s = rb.sample()
assert (s["a2"] == s["a"] * 2).all()

# a TorchRL transform appended to the buffer
rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=6)
rb.append_transform(RewardScaling(loc=0.0, scale=2.0, in_keys=[("b", "c")]))
rb.extend(data)
s = rb.sample()
assert (s["b", "c"].squeeze(-1) == s["a"].float() * 2).all()

# sampling info
rb = ReplayBuffer(storage=LazyTensorStorage(100), batch_size=4, sampler=SamplerWithoutReplacement())
rb.extend(data)
sample, info = rb.sample(return_info=True)
assert "index" in info
assert len(info["index"]) == 4
print("OK rb_transforms_writers")
