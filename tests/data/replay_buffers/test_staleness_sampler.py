"""StalenessAwareSampler: staleness cutoff and freshness weights, golden-checked against TorchRL 0.14.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data
from tdrl.data import StalenessAwareSampler

GOLDEN = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN))
import record_staleness  # noqa: E402


def test_golden_draws_match_torchrl():
    expected = json.loads((GOLDEN / "staleness_torchrl_0_14_1.json").read_text())["cases"]
    assert record_staleness.record(data, StalenessAwareSampler) == expected


def _rb(sampler, storage=None):
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(16) if storage is None else storage, sampler=sampler)
    rb.extend(TensorDict(policy_version=torch.tensor(record_staleness.VERSIONS), batch_size=[10]))
    return rb


def test_cutoff_weights_and_versions():
    sampler = StalenessAwareSampler(max_staleness=1)
    rb = _rb(sampler, data.ListStorage(16))
    sampler.consumer_version = 4
    b = rb.sample(20)
    assert set(b["policy_version"].tolist()) <= {3, 4, 5}
    assert torch.equal(b["staleness"], 4 - b["policy_version"].float())
    sampler.increment_consumer_version()
    assert sampler.consumer_version == 5 and sampler._sampleable_count(rb.storage, 1) == 4
    sampler.consumer_version = 100
    with pytest.raises(RuntimeError, match="exceed max_staleness=1"):
        rb.sample(2)
    assert not sampler.can_sample(rb.storage, 1)
    # newer-than-consumer data is fresh, not a division by zero
    sampler = StalenessAwareSampler()
    rb = _rb(sampler)
    assert rb.sample(4).batch_size == (4,)
    torch.manual_seed(0)
    counts = torch.bincount(rb.sample(2000)["policy_version"], minlength=6)
    assert counts.sum() == 2000
    sampler.consumer_version = 5
    fresh = torch.bincount(rb.sample(4000)["policy_version"], minlength=6).float()
    assert fresh[5] / 3 > fresh[0] * 3  # weight 1 vs 1/6 per item


def test_multidim_storage_and_generator():
    sampler = StalenessAwareSampler()
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(8, ndim=2), sampler=sampler)
    rb.extend(TensorDict(policy_version=torch.tensor([[0, 1], [2, 3], [4, 5]]), batch_size=[3, 2]))
    sampler.consumer_version = 5
    rb.set_rng(torch.Generator().manual_seed(1))
    b1 = rb.sample(4)
    rb.set_rng(torch.Generator().manual_seed(1))
    b2 = rb.sample(4)
    assert torch.equal(b1["policy_version"], b2["policy_version"])
    assert torch.equal(b1["staleness"], 5 - b1["policy_version"].float())


def test_errors_and_state(tmp_path):
    with pytest.raises(ValueError, match="max_staleness"):
        StalenessAwareSampler(max_staleness=-3)
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(4), sampler=StalenessAwareSampler())
    rb.extend(TensorDict(x=torch.zeros(3), batch_size=[3]))
    with pytest.raises(KeyError, match="policy_version"):
        rb.sample(2)
    bad = StalenessAwareSampler(staleness_weight_fn=lambda s: -torch.ones_like(s))
    with pytest.raises(ValueError, match="non-negative weights"):
        _rb(bad).sample(2)
    sampler = StalenessAwareSampler(max_staleness=3)
    sampler.consumer_version = 7
    sampler.dumps(tmp_path / "s")
    other = StalenessAwareSampler()
    other.loads(tmp_path / "s")
    assert other.state_dict() == {"consumer_version": 7, "max_staleness": 3}
    other._empty()
    assert other.consumer_version == 0 and "max_staleness=3" in repr(other)
