"""ConsumingSampler / ReplayBuffer(consume_after_n_samples=...) against TorchRL 0.14.1.

Every literal below was recorded with TorchRL 0.14.1 running the same calls after ``torch.manual_seed(0)``.
"""

from __future__ import annotations

import pytest
import torch

from tdrl.data import (
    ConsumingSampler,
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    SamplerWithoutReplacement,
    TensorDictMaxValueWriter,
)


def test_consume_once_then_refill_freed_slots_golden():
    torch.manual_seed(0)
    rb = ReplayBuffer(storage=LazyTensorStorage(6), batch_size=3, consume_after_n_samples=1)
    assert type(rb.sampler) is ConsumingSampler and rb.sampler.max_sample_count == 1
    assert rb.extend(torch.arange(4)).tolist() == [0, 1, 2, 3]
    assert rb.sample().tolist() == [0, 1, 3] and len(rb) == 1
    assert rb.sample().tolist() == [2] and len(rb) == 0 and rb.sampler.ran_out
    with pytest.raises(RuntimeError, match="empty"):
        rb.sample()
    # the 4 consumed slots (in consumption order) are refilled first, then the cursor goes on
    assert rb.extend(torch.arange(10, 15)).tolist() == [0, 1, 3, 2, 4]
    assert (len(rb), rb.writer._cursor, rb.write_count, len(rb.storage)) == (5, 5, 9, 5)
    assert rb.storage[:].tolist() == [10, 11, 13, 12, 14]
    assert rb.add(torch.tensor(99)) == 5 and len(rb) == 6
    assert rb.storage[:].tolist() == [10, 11, 13, 12, 14, 99]


def test_max_sample_count_two_golden():
    torch.manual_seed(0)
    rb = ReplayBuffer(storage=LazyTensorStorage(10), batch_size=2, sampler=ConsumingSampler(2))
    rb.extend(torch.arange(3))
    got = [(rb.sample().tolist(), len(rb)) for _ in range(3)]
    assert got == [([2, 0], 3), ([2, 1], 2), ([1, 0], 0)]
    with pytest.raises(RuntimeError, match="empty"):
        rb.sample()
    state = rb.sampler.state_dict()
    assert state["_sample_count"].tolist() == [2, 2, 2] and not state["_live_mask"].any()
    assert state["_known_storage_len"] == 3 and state["_ran_out"] is True
    assert state["_free_indices"].tolist() == [2, 1, 0]


def test_iteration_ends_when_all_consumed_golden():
    torch.manual_seed(0)
    rb = ReplayBuffer(storage=LazyTensorStorage(10), batch_size=3, consume_after_n_samples=1)
    rb.extend(torch.arange(7))
    assert [b.tolist() for b in rb] == [[4, 0, 5], [6, 3, 1], [2]]


def test_list_storage_docstring_case():
    rb = ReplayBuffer(storage=ListStorage(10), sampler=ConsumingSampler(), batch_size=3)
    rb.extend([torch.tensor(i) for i in range(4)])
    assert len(rb.sample()) == 3 and len(rb) == 1


def test_state_dict_round_trip_keeps_free_list():
    rb = ReplayBuffer(storage=LazyTensorStorage(8), batch_size=2, consume_after_n_samples=1)
    rb.extend(torch.arange(5))
    rb.sample()
    state = rb.sampler.state_dict()
    fresh = ConsumingSampler()
    fresh.load_state_dict(state)
    assert fresh._num_sampleable() == 3
    consumed = rb.sampler._pop_consumed_indices().tolist()
    assert len(consumed) == 2 and fresh._pop_consumed_indices().tolist() == consumed
    del state["_free_indices"]
    fresh.load_state_dict(state)  # an older state without the free list: rebuilt in slot order
    assert fresh._pop_consumed_indices().tolist() == sorted(consumed)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"consume_after_n_samples": 0}, ValueError, "positive integer"),
        ({"consume_after_n_samples": True}, TypeError, "positive integer"),
        ({"consume_after_n_samples": 1.5}, TypeError, "positive integer"),
        ({"consume_after_n_samples": 1, "prefetch": 2, "batch_size": 2}, ValueError, "prefetch"),
        ({"consume_after_n_samples": 1, "sampler": SamplerWithoutReplacement()}, ValueError, "RandomSampler"),
        ({"consume_after_n_samples": 2, "sampler": ConsumingSampler(1)}, ValueError, "conflicts"),
        ({"sampler": ConsumingSampler(), "storage": LazyTensorStorage(10, ndim=2)}, ValueError, "1-dimensional"),
        ({"sampler": ConsumingSampler(), "writer": TensorDictMaxValueWriter()}, TypeError, "write_at"),
    ],
)
def test_bad_configurations(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ReplayBuffer(**kwargs)
    with pytest.raises(TypeError, match="positive integer"):
        ConsumingSampler(max_sample_count=2.0)


def test_buffer_dumps_loads_keeps_consumed_state(tmp_path):
    torch.manual_seed(0)
    rb = ReplayBuffer(storage=LazyTensorStorage(8), batch_size=2, consume_after_n_samples=1)
    rb.extend(torch.arange(5))
    rb.sample()
    rb.dumps(tmp_path / "ckpt")
    fresh = ReplayBuffer(storage=LazyTensorStorage(8), batch_size=2, consume_after_n_samples=1)
    fresh.loads(tmp_path / "ckpt")
    assert len(fresh) == 3
    assert fresh.extend(torch.arange(10, 12)).tolist() == rb.extend(torch.arange(10, 12)).tolist()
