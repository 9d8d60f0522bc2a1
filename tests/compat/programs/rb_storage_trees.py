"""Replay buffers over tensorclasses and pytrees: memmap / tensor storages, transforms, prefetch, iteration."""

import tempfile

import torch
from tensordict import tensorclass
from torch.utils._pytree import tree_map

from tdrl.data import LazyMemmapStorage, LazyTensorStorage, ReplayBuffer
from tdrl.data.replay_buffers.samplers import SamplerWithoutReplacement

torch.manual_seed(0)


@tensorclass
class Images:
    pixels: torch.Tensor
    labels: torch.Tensor


data = Images(pixels=torch.randint(255, (40, 4, 4, 3)), labels=torch.arange(40), batch_size=[40])

# a tensorclass batch: one item per row, samples come back as the tensorclass
with tempfile.TemporaryDirectory() as tmp:
    rb = ReplayBuffer(storage=LazyMemmapStorage(100, scratch_dir=tmp), batch_size=12)
    assert rb.extend(data).tolist() == list(range(40))
    sample = rb.sample()
    assert isinstance(sample, Images) and sample.batch_size == torch.Size([12])
    assert (sample.pixels == data.pixels[sample.labels]).all()

# add() stores the whole tensorclass as one item; prefetching and iteration keep the class
rb = ReplayBuffer(storage=LazyMemmapStorage(100), batch_size=8, prefetch=3)
rb.add(data)
assert len(rb) == 1
for i, batch in enumerate(rb):
    assert isinstance(batch, Images) and batch.batch_size == torch.Size([8, 40])
    if i == 2:
        break

# without replacement, the iterator ends once every item was seen
rb = ReplayBuffer(storage=LazyTensorStorage(100), batch_size=10, sampler=SamplerWithoutReplacement())
rb.extend(data)
seen = torch.cat([b.labels for b in rb])
assert sorted(seen.tolist()) == list(range(40))


# pytrees: nested dicts / tuples / lists of tensors, any callable as transform
def zero(x):
    return tree_map(lambda y: y * 0, x)


tree = {"a": torch.randn(3), "b": {"c": (torch.zeros(2), [torch.ones(1)])}, 30: -torch.ones(())}
rb = ReplayBuffer(storage=LazyMemmapStorage(100), transform=zero)
assert rb.add(tree) == 0
sample = rb.sample(10)
assert sample["a"].shape == (10, 3) and sample["b"]["c"][0].shape == (10, 2)
assert sample["b"]["c"][1][0].shape == (10, 1) and sample[30].shape == (10,)


def assert_zero(x):
    assert (x == 0).all(), x


tree_map(assert_zero, sample)

batch = {"a": torch.randn(5, 3), "b": {"c": (torch.zeros(5, 2), [torch.ones(5, 1)])}, 30: -torch.ones(5)}
assert rb.extend(batch).tolist() == [1, 2, 3, 4, 5]
assert len(rb) == 6

# a tuple of tensors is one batch (not a list of items) for tensor storages
rb = ReplayBuffer(storage=LazyTensorStorage(10), batch_size=2)
rb.extend((torch.arange(4), torch.arange(8).view(4, 2)))
obs, act = rb.sample()
assert obs.shape == (2,) and act.shape == (2, 2) and (act[:, 0] == obs * 2).all()
x, y = rb[1:3]
assert x.tolist() == [1, 2] and y.tolist() == [[2, 3], [4, 5]]

print("OK rb_storage_trees")
