"""consolidate_spec, check_no_exclusive_keys, contains_lazy_spec, DEVICE_TYPING (golden vs TorchRL 0.14.1)."""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path

import pytest
import torch

import tdrl.data as data
from tdrl.data import Composite, Unbounded, check_no_exclusive_keys, consolidate_spec, contains_lazy_spec

GOLDEN = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN))
import record_spec_utils  # noqa: E402


def test_golden_consolidation_matches_torchrl():
    expected = json.loads((GOLDEN / "spec_utils_torchrl_0_14_1.json").read_text())["cases"]
    assert record_spec_utils.record(data) == expected


def test_consolidated_spec_samples_a_dense_stack():
    spec = torch.stack([Composite(a=Unbounded(3)), Composite(a=Unbounded(3), b=Unbounded(2))], 0)
    out = consolidate_spec(spec)
    assert out is not spec and sorted(spec.keys()) == ["a"]  # the input is untouched
    sample = out.rand()
    assert sample[0]["b"].shape == (0,) and sample[1]["b"].shape == (2,)
    assert out[0]["b"].is_in(sample[0]["b"])
    flat = consolidate_spec(spec, recurse_through_entries=False, recurse_through_stack=False)
    assert check_no_exclusive_keys(flat)


def test_mixed_classes_and_plain_specs():
    spec = torch.stack([Composite(b=Unbounded(2)), Composite(a=Unbounded(1)), Composite(b=data.Categorical(3, (2,)))], 0)
    with pytest.raises(ValueError, match="different classes"):
        consolidate_spec(spec)
    leaf = Unbounded(2)
    assert consolidate_spec(leaf) == leaf and consolidate_spec(leaf) is not leaf
    assert not contains_lazy_spec(leaf) and check_no_exclusive_keys(leaf)
    assert contains_lazy_spec(Composite(n=Composite(x=torch.stack([Unbounded(2), Unbounded(3)], 0))))
    nested = Composite(n=torch.stack([Composite(a=Unbounded(1)), Composite(b=Unbounded(1))], 0), shape=())
    assert not check_no_exclusive_keys(nested) and check_no_exclusive_keys(nested, recurse=False)


def test_device_typing():
    assert set(typing.get_args(data.DEVICE_TYPING)) == {torch.device, str, int}
