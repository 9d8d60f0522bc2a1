"""Golden values from TorchRL 0.14.1 (``_golden_imitation.py``, recorded by ``record_torchrl_golden_imitation.py``)
for DiffusionActor / DiffusionBCLoss, ACTModel / ACTLoss, RBFController, ExponentialQuadraticCost and
KLAdaptiveLR: outputs under fixed seeds and gradients, with the same weights in both libraries."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

import tdrl.modules
import tdrl.modules.models
import tdrl.objectives

from ._golden_imitation import act, cost, diffusion, kl_lr, rbf

GOLDEN = torch.load(Path(__file__).with_name("golden_torchrl_0_14_1_imitation.pt"), weights_only=True)
LIB = SimpleNamespace(modules=tdrl.modules, objectives=tdrl.objectives)
SCENARIOS = {"diffusion": diffusion, "act": act, "rbf": rbf, "cost": cost}


def _compare(mine: Any, ref: Any, path: str) -> None:
    if isinstance(ref, dict):
        assert sorted(mine) == sorted(ref), path
        for key in ref:
            _compare(mine[key], ref[key], f"{path}/{key}")
    elif isinstance(ref, (list, tuple)):
        assert len(mine) == len(ref), path
        for i, (a, b) in enumerate(zip(mine, ref)):
            _compare(a, b, f"{path}[{i}]")
    else:
        torch.testing.assert_close(mine, ref, rtol=1e-4, atol=1e-5, msg=path)


def test_golden_file_version() -> None:
    assert GOLDEN["torchrl_version"] == "0.14.1"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_matches_torchrl(name: str) -> None:
    _compare(SCENARIOS[name](LIB), GOLDEN[name], name)


def test_kl_adaptive_lr_matches_torchrl() -> None:
    mine = kl_lr(LIB)
    assert mine == pytest.approx(GOLDEN["kl_lr"], rel=1e-12)
    # The schedule clamps at both ends: the trace reaches max_lr and min_lr.
    assert max(mine) == pytest.approx(5e-3) and min(mine) == pytest.approx(2e-4)
