"""Writers: round-robin cursors and the top-k max-value writer."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data


def _rb(capacity: int = 3) -> data.TensorDictReplayBuffer:
    return data.TensorDictReplayBuffer(
        storage=data.LazyTensorStorage(capacity), writer=data.TensorDictMaxValueWriter(rank_key="r"), batch_size=2
    )


def test_max_value_writer_matches_torchrl():
    # Golden values from TorchRL 0.14.1 on the same calls.
    rb = _rb()
    assert rb.extend(TensorDict(r=torch.tensor([1.0, 5, 3, 2]), batch_size=[4])).tolist() == [-1, 1, 2, 0]
    assert rb._storage._storage["r"].tolist() == [2.0, 5.0, 3.0]
    assert rb.extend(TensorDict(r=torch.tensor([4.0, 0]), batch_size=[2])).tolist() == [0, -1]
    assert rb._storage._storage["r"].tolist() == [4.0, 5.0, 3.0]
    assert rb.add(TensorDict(r=torch.tensor(10.0), batch_size=[])) == 2
    assert rb.add(TensorDict(r=torch.tensor(-1.0), batch_size=[])) is None
    assert rb._storage._storage["r"].tolist() == [4.0, 5.0, 10.0]


def test_max_value_writer_reduction_and_state():
    rb = _rb()
    rb.extend(TensorDict(r=torch.tensor([[1.0, 5], [3, 2], [0, 0]]), batch_size=[3]))
    rb.extend(TensorDict(r=torch.tensor([[2.0, 2]]), batch_size=[1]))
    assert sorted(rb._storage._storage["r"].sum(-1).tolist()) == [4.0, 5.0, 6.0]
    state = rb._writer.state_dict()
    other = data.TensorDictMaxValueWriter(rank_key="r")
    other.load_state_dict(state)
    assert sorted(other._current_top_values) == sorted(rb._writer._current_top_values)


def test_max_value_writer_errors_leave_state():
    rb = _rb()
    rb.extend(TensorDict(r=torch.tensor([1.0, 2.0]), batch_size=[2]))
    before = (rb._writer._cursor, list(rb._writer._current_top_values))
    with pytest.raises(KeyError, match="rank_key"):
        rb.extend(TensorDict(other=torch.tensor([1.0]), batch_size=[1]))
    with pytest.raises(KeyError):
        rb.extend(TensorDict(r=torch.tensor([9.0]), extra=torch.zeros(1), batch_size=[1]))
    assert (rb._writer._cursor, list(rb._writer._current_top_values)) == before
    with pytest.raises(ValueError, match="reduction"):
        data.TensorDictMaxValueWriter(reduction="median")


def test_round_robin_writer_state_and_empty_batch():
    rb = data.ReplayBuffer(storage=data.LazyTensorStorage(5), batch_size=2)
    rb.extend(torch.arange(7))
    assert rb._writer.state_dict() == {"_cursor": 2, "_write_count": 7}
    with pytest.raises(RuntimeError, match="empty batch"):
        rb.extend(torch.zeros(0))
    assert rb._writer.state_dict() == {"_cursor": 2, "_write_count": 7}


def test_immutable_dataset_writer_refuses_writes_and_checkpoints(tmp_path):
    import pytest
    import torch

    from tdrl.data import ImmutableDatasetWriter, LazyTensorStorage, ReplayBuffer

    storage = LazyTensorStorage(4)
    storage.set(torch.arange(4), torch.arange(4))
    rb = ReplayBuffer(storage=storage, writer=ImmutableDatasetWriter(), batch_size=2)
    assert rb.sample().shape == (2,) and rb.stats()["write_count"] == 0
    for call in (lambda: rb.add(torch.tensor(1)), lambda: rb.extend(torch.zeros(2)), rb.empty):
        with pytest.raises(RuntimeError, match="doesn't allow writing"):
            call()
    rb.dumps(tmp_path)
    rb.loads(tmp_path)
    assert torch.equal(rb[:], torch.arange(4))
