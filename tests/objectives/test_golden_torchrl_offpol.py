"""Golden values from TorchRL 0.14.1 for CrossQ, TQC, BC and RND (``_golden_offpol.py``, recorded by
``record_torchrl_golden_offpol.py``): outputs of consecutive calls, the written ``td_error``, per-term
gradient sums, the intrinsic rewards and running statistics of ``RNDTransform``, and the outputs,
gradients and state of ``gSDEModule`` / ``LazygSDEModule``."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import tdrl.data
import tdrl.envs.transforms
import tdrl.modules
import tdrl.modules.models.exploration
import tdrl.objectives

from ._golden_offpol import GSDE_CASES, RND_TRANSFORM_CASES, SCENARIOS, gsde_trace, rnd_transform_trace
from ._golden_scenarios import run

GOLDEN = torch.load(Path(__file__).with_name("golden_torchrl_0_14_1_offpol.pt"), weights_only=True)
LIB = SimpleNamespace(objectives=tdrl.objectives, modules=tdrl.modules, data=tdrl.data, envs=tdrl.envs.transforms,
                      exploration=tdrl.modules.models.exploration)


def _close(mine: torch.Tensor, ref: torch.Tensor, msg: str) -> None:
    torch.testing.assert_close(mine, ref, rtol=1e-4, atol=1e-5, msg=msg)


def test_golden_file_covers_every_case() -> None:
    assert GOLDEN["torchrl_version"] == "0.14.1"
    assert sorted(GOLDEN["losses"]) == sorted(SCENARIOS)
    assert sorted(GOLDEN["rnd_transform"]) == sorted(RND_TRANSFORM_CASES)
    assert sorted(GOLDEN["gsde"]) == sorted(GSDE_CASES)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_loss_matches_torchrl(name: str) -> None:
    ref = GOLDEN["losses"][name]
    mine = run(LIB, name, state_dict=ref["sd"], scenarios=SCENARIOS)
    for call, (ref_out, my_out) in enumerate(zip(ref["outs"], mine["outs"], strict=True)):
        assert sorted(my_out) == sorted(ref_out), f"call {call}"
        for key, value in ref_out.items():
            _close(my_out[key], value, f"call {call}: {key}")
    for call, (ref_nt, my_nt) in enumerate(zip(ref["non_tensor"], mine["non_tensor"], strict=True)):
        assert sorted(my_nt) == sorted(ref_nt)
        for key, value in ref_nt.items():
            _close(my_nt[key], value, f"call {call}: non-tensor {key}")
    if ref["td_error"] is not None:
        _close(mine["td_error"], ref["td_error"], "td_error")
    else:
        assert mine["td_error"] is None
    assert sorted(mine["grads"]) == sorted(ref["grads"])
    for term, grads in ref["grads"].items():
        assert sorted(mine["grads"][term]) == sorted(grads), term
        for pname, g in grads.items():
            _close(mine["grads"][term][pname], g, f"{term}/{pname}")


@pytest.mark.parametrize("name", sorted(RND_TRANSFORM_CASES))
def test_rnd_transform_matches_torchrl(name: str) -> None:
    ref = GOLDEN["rnd_transform"][name]
    mine = rnd_transform_trace(LIB, **RND_TRANSFORM_CASES[name])
    assert sorted(mine) == sorted(ref)
    for key, value in ref.items():
        _close(mine[key], value, key)


@pytest.mark.parametrize("name", sorted(GSDE_CASES))
def test_gsde_matches_torchrl(name: str) -> None:
    ref = GOLDEN["gsde"][name]
    lazy, kwargs = GSDE_CASES[name]
    mine = gsde_trace(LIB, lazy, **kwargs)
    assert sorted(mine) == sorted(ref)
    for key, value in ref.items():
        _close(mine[key], value, key)
