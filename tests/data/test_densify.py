"""DensifyReward: reward-to-go within trajectories, golden-checked against TorchRL 0.14.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data
from tdrl.data import DensifyReward

GOLDEN = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN))
import record_densify  # noqa: E402


def test_golden_matches_torchrl():
    expected = json.loads((GOLDEN / "densify_torchrl_0_14_1.json").read_text())["cases"]
    got = record_densify.record(data)
    assert got.keys() == expected.keys()
    for name in expected:  # summation order differs: compare up to float rounding
        assert got[name] == pytest.approx(expected[name], abs=2e-5), name


def test_reference_loop_and_keys():
    td = record_densify.batch(0, (2, 8))
    reward, done = td["next", "reward"].clone(), td["next", "done"]
    out = DensifyReward(discount=0.7, reward_key_out="dense")(td)
    assert torch.equal(out["next", "reward"], reward)  # input reward kept when writing elsewhere
    for row in range(2):
        g = 0.0
        for t in reversed(range(8)):
            g = float(reward[row, t]) + 0.7 * g * (not bool(done[row, t]))
            assert float(out["next", "dense"][row, t]) == pytest.approx(g, abs=1e-5)
    assert DensifyReward(reward_key_out="dense").out_keys == ["dense"]


def test_errors():
    td = TensorDict({"next": {"reward": torch.zeros(4, 1), "done": torch.zeros(4, dtype=torch.bool)}}, [4])
    with pytest.raises(ValueError, match="same shape"):
        DensifyReward()(td)
    with pytest.raises(KeyError, match="'done'"):
        DensifyReward()(TensorDict({"next": {"reward": torch.zeros(4, 1)}}, [4]))
