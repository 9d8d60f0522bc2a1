"""ReplayBufferEnsemble and StorageEnsemble."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data


def _members() -> list[data.TensorDictReplayBuffer]:
    rb0 = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(10))
    rb1 = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(10))
    rb0.extend(TensorDict(a=torch.zeros(10), batch_size=[10]))
    rb1.extend(TensorDict(a=torch.ones(10), b=torch.ones(10, 2), batch_size=[10]))
    return [rb0, rb1]


def test_sample_from_all_layout_and_index():
    ens = data.ReplayBufferEnsemble(*_members(), batch_size=6, sample_from_all=True)
    sample, info = ens.sample(return_info=True)
    assert sample.batch_size == (2, 3)
    assert sample["a"].tolist() == [[0.0] * 3, [1.0] * 3]
    assert sample["index", "buffer_ids"].tolist() == [[0, 0, 0], [1, 1, 1]]
    assert torch.equal(info["index", "index"], sample["index", "index"])
    assert len(ens) == 2 and ens[1] is not ens[0]


def test_probabilities_pick_buffers():
    ens = data.ReplayBufferEnsemble(*_members(), batch_size=4, num_buffer_sampled=1, p=[0.0, 1.0])
    for _ in range(3):
        sample = ens.sample()
        assert sample.batch_size == (1, 4) and (sample["a"] == 1).all() and "b" in sample.keys()


def test_errors_and_checkpoint(tmp_path):
    ens = data.ReplayBufferEnsemble(*_members(), batch_size=5, sample_from_all=True)
    with pytest.raises(ValueError, match="divisible"):
        ens.sample()
    with pytest.raises(TypeError, match="member"):
        ens.extend(TensorDict(a=torch.zeros(2), batch_size=[2]))
    with pytest.raises(ValueError, match="probabilities"):
        data.ReplayBufferEnsemble(*_members(), p=[1.0])
    ens.dumps(tmp_path)
    other = data.ReplayBufferEnsemble(
        data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(10)),
        data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(10)),
        batch_size=4,
        sample_from_all=True,
    )
    other.loads(tmp_path)
    assert other.sample()["a"].tolist() == [[0.0, 0.0], [1.0, 1.0]]


def test_storage_ensemble():
    s0, s1 = data.LazyTensorStorage(4), data.LazyTensorStorage(4)
    s0.set(torch.arange(3), torch.arange(3.0))
    s1.set(torch.arange(3), 10 + torch.arange(3.0))
    ens = data.StorageEnsemble(s0, s1, transforms=[None, lambda x: -x])
    out = ens.get((torch.tensor([1, 0, 1]), torch.tensor([2, 1, 0])))
    assert out[0].tolist() == [1.0] and out[1].tolist() == [-12.0, -10.0]
    assert ens[0] is s0 and len(ens) == 2
    with pytest.raises(TypeError, match="read-only"):
        ens.set(0, torch.zeros(()))
    rb = data.ReplayBufferEnsemble(storages=ens, batch_size=2, sample_from_all=True)
    assert len(rb) == 2
