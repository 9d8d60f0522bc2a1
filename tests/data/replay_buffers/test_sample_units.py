"""Sample units (Transition, Sequence) in replay buffers, golden-tested against TorchRL 0.14.1."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import (
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    SampleUnit,
    Sequence,
    TensorDictReplayBuffer,
    Transition,
)

_GOLDEN = Path(__file__).parent / "golden"


def _recorder():
    spec = importlib.util.spec_from_file_location("record_sample_units", _GOLDEN / "record_sample_units.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sequence_matches_torchrl_golden():
    expected = json.loads((_GOLDEN / "sample_units_torchrl_0_14_1.json").read_text())
    got = json.loads(json.dumps(_recorder().cases()))
    assert got.keys() == expected.keys()
    for case, values in expected.items():
        assert got[case] == values, case


def test_transition_is_identity_and_buffer_samples_windows():
    rb = ReplayBuffer(storage=LazyTensorStorage(10), batch_size=4, sample_unit=Transition())
    rb.extend(torch.arange(10))
    assert rb.sample().shape == (4,)
    done = torch.zeros(10, 1, dtype=torch.bool)
    done[[4, 9]] = True
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=2, sample_unit=Sequence(length=3))
    rb.extend(TensorDict({"obs": torch.arange(10), ("next", "done"): done}, batch_size=[10]))
    sample, info = rb.sample(return_info=True)
    assert sample.shape == (6,)
    assert torch.equal(sample["obs"], sample["index"])
    assert torch.equal(sample["validity_mask"], info["validity_mask"])
    assert sorted(info) == sorted(
        ["anchor_index", "index", "learning_mask", "sequence_id", "step_in_sequence", "validity_mask"]
    )


def test_sequence_rejects_bad_arguments_and_storages():
    with pytest.raises(ValueError, match="length"):
        Sequence(0)
    with pytest.raises(ValueError, match="episode_boundary"):
        Sequence(2, episode_boundary="wrap")
    with pytest.raises(ValueError, match="dilation"):
        Sequence(2, dilation=0)
    with pytest.raises(ValueError, match="burn_in"):
        Sequence(2, burn_in=-1)
    storage = ListStorage(4)
    with pytest.raises(TypeError, match="TensorStorage"):
        Sequence(2).expand(torch.tensor([0]), {}, storage)
    with pytest.raises(TypeError, match="SampleUnit"):
        ReplayBuffer(sample_unit="sequence")


def test_custom_sample_unit_expands_info():
    class Pairs(SampleUnit):
        def expand(self, index, info, storage):
            return torch.cat([index, (index + 1) % len(storage)]), info

    rb = ReplayBuffer(storage=LazyTensorStorage(8), batch_size=3, sample_unit=Pairs())
    rb.extend(torch.arange(8))
    out, info = rb.sample(return_info=True)
    assert out.shape == (6,) and torch.equal(out, info["index"])
    assert torch.equal(out[3:], (out[:3] + 1) % 8)
