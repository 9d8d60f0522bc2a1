"""Golden values from TorchRL 0.14.1 for the multi-agent losses (``_golden_marl.py``, recorded by
``record_torchrl_golden_marl.py``): outputs of consecutive calls (value normalisers update between them), the
written ``td_error``, per-term gradient sums, and the constructor signatures of the multi-agent names."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import tdrl.modules
import tdrl.objectives
import tdrl.objectives.value

from ._golden_marl import SCENARIOS, signatures
from ._golden_scenarios import run

GOLDEN = torch.load(Path(__file__).with_name("golden_torchrl_0_14_1_marl.pt"), weights_only=True)
LIB = SimpleNamespace(objectives=tdrl.objectives, modules=tdrl.modules)


def _close(mine: torch.Tensor, ref: torch.Tensor, msg: str) -> None:
    torch.testing.assert_close(mine, ref, rtol=1e-4, atol=1e-5, msg=msg)


def test_golden_file_covers_every_case() -> None:
    assert GOLDEN["torchrl_version"] == "0.14.1"
    assert sorted(GOLDEN["losses"]) == sorted(SCENARIOS)


@pytest.mark.parametrize("target", sorted(GOLDEN["signatures"]))
def test_signature_matches_torchrl(target: str) -> None:
    assert signatures(LIB)[target] == GOLDEN["signatures"][target]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_loss_matches_torchrl(name: str) -> None:
    ref = GOLDEN["losses"][name]
    mine = run(LIB, name, state_dict=ref["sd"], scenarios=SCENARIOS)
    for call, (ref_out, my_out) in enumerate(zip(ref["outs"], mine["outs"], strict=True)):
        assert sorted(my_out) == sorted(ref_out), f"call {call}"
        for key, value in ref_out.items():
            _close(my_out[key], value, f"call {call}: {key}")
    if ref["td_error"] is not None:
        _close(mine["td_error"], ref["td_error"], "td_error")
    else:
        assert mine["td_error"] is None
    assert sorted(mine["grads"]) == sorted(ref["grads"])
    for term, grads in ref["grads"].items():
        assert sorted(mine["grads"][term]) == sorted(grads), term
        for pname, g in grads.items():
            _close(mine["grads"][term][pname], g, f"{term}/{pname}")
