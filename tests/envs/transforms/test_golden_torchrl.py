"""ActionDiscretizer grids and VecNormV2 statistics against TorchRL 0.14.1's (recorded by
``record_torchrl_golden.py`` into ``golden_torchrl_0_14_1.pt``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import tdrl.data
import tdrl.envs

from ._transform_golden_scenarios import SCENARIOS

GOLDEN = torch.load(Path(__file__).with_name("golden_torchrl_0_14_1.pt"), weights_only=True)
LIB = SimpleNamespace(envs=tdrl.envs, data=tdrl.data)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_matches_torchrl(scenario: str) -> None:
    assert GOLDEN["torchrl_version"].startswith("0.14.1")
    ours, theirs = SCENARIOS[scenario](LIB), GOLDEN[scenario]
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        torch.testing.assert_close(ours[name], theirs[name], rtol=1e-5, atol=1e-5, equal_nan=True, msg=lambda m, n=name: f"{n}: {m}")
