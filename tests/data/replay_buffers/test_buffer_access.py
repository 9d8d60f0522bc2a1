"""ReplayBuffer's whole-buffer helpers, iterable extends and prefetched iteration (TorchRL 0.14.1 semantics)."""

from __future__ import annotations

import tempfile
import threading

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import (
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    RandomSampler,
    ReplayBuffer,
    RoundRobinWriter,
    SamplerWithoutReplacement,
    TensorDictReplayBuffer,
)


def test_extend_range_on_default_list_storage():
    # rb_tutorial: ReplayBuffer().extend(range(2000)) keeps the first 1000 writes' last 1000 items.
    buffer = ReplayBuffer()
    buffer.extend(range(2000))
    assert len(buffer) == 1000
    sample = buffer.sample(5)
    assert isinstance(sample, torch.Tensor) and sample.shape == (5,)
    assert bool(((sample >= 1000) & (sample < 2000)).all())


def test_extend_generator_on_tensor_storage():
    rb = ReplayBuffer(storage=LazyTensorStorage(10))
    rb.extend(i * 2 for i in range(4))
    assert torch.equal(rb[:], torch.tensor([0, 2, 4, 6]))


@pytest.mark.parametrize("drop_last", [False, True])
def test_prefetch_iterates_one_epoch_without_replacement(drop_last):
    rb = ReplayBuffer(
        storage=LazyTensorStorage(10),
        sampler=SamplerWithoutReplacement(drop_last=drop_last),
        batch_size=3,
        prefetch=3,
    )
    rb.extend(torch.arange(10))
    result: dict = {}

    def run():
        result["epochs"] = [torch.cat(list(rb)) for _ in range(3)]

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "iterating a prefetching buffer hung"
    for epoch in result["epochs"]:
        assert epoch.numel() == (9 if drop_last else 10)
        assert epoch.unique().numel() == epoch.numel()


def test_prefetch_shared_by_sampling_threads():
    rb = ReplayBuffer(
        storage=LazyTensorStorage(50), sampler=SamplerWithoutReplacement(), batch_size=5, prefetch=4
    )
    rb.extend(torch.arange(50))
    errors: list[BaseException] = []

    def draw():
        try:
            for _ in range(40):
                rb.sample()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors


def test_stats_snapshot():
    rb = ReplayBuffer(storage=LazyTensorStorage(10))
    rb.extend(torch.arange(15))
    assert rb.stats() == {
        "size": 10,
        "write_count": 15,
        "prefetch_queue_size": 0,
        "initialized": True,
        "capacity": 10,
        "utilization": 1.0,
    }


def test_read_all_in_order_and_write_all():
    rb = ReplayBuffer(storage=LazyTensorStorage(4))
    rb.extend(torch.arange(6))
    assert torch.equal(rb.read_all_in_order(), torch.tensor([4, 5, 2, 3]))
    rb.write_all(torch.tensor([9, 9, 9, 9]))
    assert torch.equal(rb[:], torch.tensor([9, 9, 9, 9]))
    rb[1] = torch.tensor(7)
    assert rb[1] == 7


def test_in_place_entry_updates_and_component_swaps():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(5), batch_size=2)
    rb.extend(TensorDict({"a": torch.zeros(5)}, batch_size=[5]))
    rb.set_("a", torch.ones(5))
    rb.set_at_("a", torch.tensor([3.0]), torch.tensor([2]))
    assert rb[:]["a"].tolist() == [1, 1, 3, 1, 1]
    rb.update_({"a": torch.full((5,), 2.0)})
    assert rb[:]["a"].tolist() == [2] * 5
    rb["a"] = torch.arange(5.0)
    assert rb[:]["a"].tolist() == [0, 1, 2, 3, 4]
    assert rb.can_sample() and not ReplayBuffer(sampler=SamplerWithoutReplacement(drop_last=True)).can_sample(
        3
    )
    old = rb.set_sampler(RandomSampler())
    assert isinstance(old, RandomSampler) and isinstance(rb.sampler, RandomSampler)
    writer = RoundRobinWriter()
    rb.set_writer(writer)
    assert writer._storage is rb.storage
    previous = rb.set_storage(ListStorage(3))
    assert isinstance(previous, LazyTensorStorage) and len(rb) == 0
    with pytest.raises(RuntimeError, match="batch_size"):
        ReplayBuffer().can_sample()


def test_next_walks_an_epoch():
    rb = ReplayBuffer(storage=LazyTensorStorage(4), sampler=SamplerWithoutReplacement(), batch_size=2)
    rb.extend(torch.arange(4))
    first, second, third = rb.next(), rb.next(), rb.next()
    assert torch.cat([first, second]).sort().values.tolist() == [0, 1, 2, 3]
    assert third is None


def test_memmap_scratch_dir_accepts_a_temporary_directory():
    tmp = tempfile.TemporaryDirectory()
    rb = ReplayBuffer(storage=LazyMemmapStorage(10, scratch_dir=tmp))
    rb.extend(TensorDict({"a": torch.arange(3)}, [3]))
    assert rb.storage._storage["a"].filename.startswith(tmp.name)
    tmp.cleanup()
