"""(e) Replay buffers: storages, samplers, extend/sample/iterate, dumps/loads."""

import tempfile

import torch
from tensordict import TensorDict

from tdrl.data import (
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    TensorDictReplayBuffer,
)
from tdrl.data.replay_buffers import SamplerWithoutReplacement, SliceSampler

torch.manual_seed(0)

# plain ReplayBuffer with ListStorage holding arbitrary objects
rb = ReplayBuffer(storage=ListStorage(max_size=100), batch_size=4, collate_fn=lambda x: x)
rb.extend([(i, i * 2) for i in range(10)])
assert len(rb) == 10
batch = rb.sample()
assert len(batch) == 4
assert all(b == a * 2 for a, b in batch)
rb.add((100, 200))
assert len(rb) == 11
# ListStorage of tensors: the default collate stacks them
rb = ReplayBuffer(storage=ListStorage(max_size=10), batch_size=3)
rb.extend([torch.full((2,), float(i)) for i in range(5)])
assert rb.sample().shape == (3, 2)

# tensors in LazyTensorStorage
rb = ReplayBuffer(storage=LazyTensorStorage(1000), batch_size=16)
rb.extend(torch.randn(100, 3))
assert rb.sample().shape == (16, 3)

# TensorDictReplayBuffer with LazyMemmapStorage, extend a tensordict
data = TensorDict(
    {"obs": torch.randn(64, 4), "action": torch.randn(64, 2), ("next", "obs"): torch.randn(64, 4)},
    batch_size=[64],
)
with tempfile.TemporaryDirectory() as tmp:
    rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(128, scratch_dir=tmp), batch_size=8)
    idx = rb.extend(data)
    assert len(idx) == 64
    s = rb.sample()
    assert s.batch_size == (8,)
    assert set(s.keys()) >= {"obs", "action", "next"}
    assert "index" in s.keys()
    # circular overwrite
    rb.extend(data)
    rb.extend(data)
    assert len(rb) == 128

# SamplerWithoutReplacement: one epoch of minibatches via iteration
rb = ReplayBuffer(
    storage=LazyTensorStorage(64),
    sampler=SamplerWithoutReplacement(),
    batch_size=16,
)
rb.extend(data)
seen = []
for b in rb:
    assert b.batch_size == (16,)
    seen.append(b["obs"])
seen = torch.cat(seen)
assert seen.shape == (64, 4)
assert torch.unique(seen, dim=0).shape[0] == 64

# SliceSampler over trajectories
T = 20
traj = torch.arange(4).repeat_interleave(T // 4)
seq = TensorDict(
    {"obs": torch.arange(T, dtype=torch.float32).unsqueeze(-1), "episode": traj},
    batch_size=[T],
)
rb = TensorDictReplayBuffer(
    storage=LazyTensorStorage(100),
    sampler=SliceSampler(slice_len=5, traj_key="episode"),
    batch_size=10,
)
rb.extend(seq)
s = rb.sample()
assert s.batch_size == (10,)
ep = s["episode"].view(2, 5)
assert (ep == ep[:, :1]).all()

# dumps / loads
rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=4)
rb.extend(data[:30])
with tempfile.TemporaryDirectory() as tmp:
    rb.dumps(tmp)
    rb2 = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=4)
    rb2.loads(tmp)
    assert len(rb2) == 30
    assert (rb2[:30]["obs"] == data[:30]["obs"]).all()
    # state_dict round trip
    sd = rb.state_dict()
    rb3 = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=4)
    rb3.load_state_dict(sd)
    assert len(rb3) == 30
rb.empty()
assert len(rb) == 0
print("OK replay_buffers")
