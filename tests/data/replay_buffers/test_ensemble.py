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


# ---- SamplerEnsemble / WriterEnsemble / StorageEnsemble (TorchRL's index format) ----------------
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

GOLDEN = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN))
import record_ensembles  # noqa: E402


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_sampler_ensemble_golden_draws_match_torchrl():
    expected = json.loads((GOLDEN / "ensembles_torchrl_0_14_1.json").read_text())["cases"]
    assert record_ensembles.record(data) == expected


def test_sampler_ensemble_layout_info_and_generator():
    prio = data.PrioritizedSampler(8, alpha=0.7, beta=0.5)
    member = data.ReplayBuffer(storage=data.LazyTensorStorage(8), sampler=prio)
    member.extend(torch.arange(5))
    storage = data.StorageEnsemble(data.LazyTensorStorage(2), member.storage, data.LazyTensorStorage(2))
    sampler = data.SamplerEnsemble(data.RandomSampler(), prio, data.RandomSampler(), p=[0.0, 1.0, 0.0],
                                   num_buffer_sampled=2)
    sampler._rng = torch.Generator().manual_seed(0)
    assert all(s._rng is sampler._rng for s in sampler._samplers)
    index, info = sampler.sample(storage, 8)
    assert index.batch_size == (2,) and index["buffer_ids"].tolist() == [1, 1]
    assert index["index"].shape == (2, 4) and bool((index["index"] < 5).all())
    assert info["priority_weight"].shape == (2, 4)
    sampler._rng = torch.Generator().manual_seed(0)
    again, _ = sampler.sample(storage, 8)
    assert torch.equal(again["index"], index["index"])
    assert sampler.can_sample(storage, 8) and not sampler.can_sample(storage, 7)


def test_sampler_ensemble_errors_and_indexing(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        data.SamplerEnsemble(data.RandomSampler(), p=[1.0], sample_from_all=True)
    with pytest.raises(ValueError, match="sampleable"):
        data.SamplerEnsemble(data.RandomSampler(), p="sometimes")
    with pytest.raises(ValueError, match="2 non-negative"):
        data.SamplerEnsemble(data.RandomSampler(), data.RandomSampler(), p=[1.0])
    with pytest.raises(TypeError, match="Sampler instances"):
        data.SamplerEnsemble(object())
    sampler = data.SamplerEnsemble(*(data.SamplerWithoutReplacement() for _ in range(3)), p=[1, 1, 2])
    assert torch.allclose(sampler.p, torch.tensor([0.25, 0.25, 0.5]))
    with pytest.raises(TypeError, match="StorageEnsemble"):
        sampler.sample(data.LazyTensorStorage(3), 3)
    with pytest.raises(ValueError, match="divisible"):
        sampler.sample(record_ensembles.storages(data), 4)
    sub = sampler[[0, 2]]
    assert len(sub) == 2 and torch.allclose(sub.p, torch.tensor([1 / 3, 2 / 3]))
    assert sampler[1] is sampler._samplers[1] and len(sampler[1:]) == 2
    with pytest.raises(IndexError, match="out of range"):
        sampler[5]
    storage = record_ensembles.storages(data)
    sampler.sample(storage, 6)
    state = sampler.state_dict()
    assert sorted(state) == ["0", "1", "2"]
    sampler.load_state_dict(state)
    sampler.dumps(tmp_path / "s")
    sampler.loads(tmp_path / "s")
    empty = data.SamplerEnsemble(data.RandomSampler(), p="sampleable")
    with pytest.raises(RuntimeError, match="none of the ensemble members"):
        empty.sample(data.StorageEnsemble(data.LazyTensorStorage(2)), 2)


def test_writer_ensemble(tmp_path):
    storage = data.StorageEnsemble(data.LazyTensorStorage(4), data.LazyTensorStorage(4))
    writers = data.WriterEnsemble(data.RoundRobinWriter(), data.RoundRobinWriter())
    writers.register_storage(storage)
    assert writers[0]._storage is storage[0]
    writers[0].extend(torch.arange(3))
    writers[1].extend(torch.arange(6))
    assert writers._write_count == 9 and len(storage[1]) == 4
    with pytest.raises(TypeError, match="member buffer"):
        writers.extend(torch.zeros(2))
    with pytest.raises(TypeError, match="StorageEnsemble"):
        writers.register_storage(data.LazyTensorStorage(3))
    with pytest.raises(ValueError, match="2 writers for 1"):
        writers.register_storage(data.StorageEnsemble(data.LazyTensorStorage(3)))
    state = writers.state_dict()
    writers.dumps(tmp_path / "w")
    writers._empty()
    assert writers._write_count == 0 and writers[1]._cursor == 0
    writers.loads(tmp_path / "w")
    assert writers.state_dict() == state and writers[1]._cursor == 2
    assert len(writers[[1]]) == 1 and not writers.tracks_generations


def test_storage_ensemble_torchrl_index_and_subsets():
    storage = record_ensembles.storages(data)
    index = TensorDict(buffer_ids=torch.tensor([2, 0]), index=torch.tensor([[1, 6], [2, 0]]), batch_size=[2])
    out = storage.get(index)
    assert [(i, v.tolist()) for i, v in out] == [(2, [201, 206]), (0, [2, 0])]
    sub = storage[[2, 1]]
    assert isinstance(sub, data.StorageEnsemble) and sub[0] is storage[2]
    with pytest.raises(KeyError, match="buffer_ids"):
        storage.get(TensorDict(index=torch.zeros(1, 1, dtype=torch.long), batch_size=[1]))
    with pytest.raises(TypeError, match="integer"):
        storage[torch.tensor([0.5])]
    gen = torch.Generator()
    storage._rng = gen
    assert storage[1]._rng is gen


def test_replay_buffer_ensemble_takes_the_ensembles():
    ens = data.StorageEnsemble(data.LazyTensorStorage(4), data.LazyTensorStorage(4))
    rb = data.ReplayBufferEnsemble(
        storages=ens,
        samplers=data.SamplerEnsemble(data.RandomSampler(), data.RandomSampler(), p=[0.0, 1.0], num_buffer_sampled=1),
        writers=data.WriterEnsemble(data.TensorDictRoundRobinWriter(), data.TensorDictRoundRobinWriter()),
        batch_size=3,
    )
    rb[0].extend(TensorDict(a=torch.zeros(4), batch_size=[4]))
    rb[1].extend(TensorDict(a=torch.ones(4), batch_size=[4]))
    assert (rb.sample()["a"] == 1).all()
