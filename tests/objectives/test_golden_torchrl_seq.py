"""Golden values from TorchRL 0.14.1 for DTLoss, OnlineDTLoss and GAILLoss (``_golden_seq.py``, recorded by
``record_torchrl_golden_seq.py``): outputs of consecutive calls and per-term gradient sums, with TorchRL's
weights (DTActor / OnlineDTActor GPT-2 trunks, the discriminator) loaded into tdrl's modules."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import tdrl.data
import tdrl.modules
import tdrl.objectives

from ._golden_scenarios import run
from ._golden_seq import SCENARIOS, inference_trace

GOLDEN = torch.load(Path(__file__).with_name("golden_torchrl_0_14_1_seq.pt"), weights_only=True)
LIB = SimpleNamespace(objectives=tdrl.objectives, modules=tdrl.modules, data=tdrl.data)


def _close(mine: torch.Tensor, ref: torch.Tensor, msg: str) -> None:
    torch.testing.assert_close(mine, ref, rtol=1e-4, atol=1e-5, msg=msg)


def test_golden_file_covers_every_case() -> None:
    assert GOLDEN["torchrl_version"] == "0.14.1"
    assert sorted(GOLDEN["losses"]) == sorted(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_loss_matches_torchrl(name: str) -> None:
    ref = GOLDEN["losses"][name]
    mine = run(LIB, name, state_dict=ref["sd"], scenarios=SCENARIOS, plain_loss=True)
    for call, (ref_out, my_out) in enumerate(zip(ref["outs"], mine["outs"], strict=True)):
        assert sorted(my_out) == sorted(ref_out), f"call {call}"
        for key, value in ref_out.items():
            _close(my_out[key], value, f"call {call}: {key}")
    for call, (ref_nt, my_nt) in enumerate(zip(ref["non_tensor"], mine["non_tensor"], strict=True)):
        assert sorted(my_nt) == sorted(ref_nt)
        for key, value in ref_nt.items():
            _close(my_nt[key], value, f"call {call}: non-tensor {key}")
    assert sorted(mine["grads"]) == sorted(ref["grads"])
    for term, grads in ref["grads"].items():
        assert sorted(mine["grads"][term]) == sorted(grads), term
        for pname, g in grads.items():
            _close(mine["grads"][term][pname], g, f"{term}/{pname}")


@pytest.mark.parametrize("ctx", [1, 2, 4])
def test_inference_wrapper_matches_torchrl(ctx: int) -> None:
    ref = GOLDEN["inference"][ctx]
    sd = {k[len("sd."):]: v for k, v in ref.items() if k.startswith("sd.")}
    mine = inference_trace(LIB, ctx, state_dict=sd)
    assert sorted(mine) == sorted(ref)
    for key, value in ref.items():
        if key.endswith("batch_size"):
            assert mine[key].tolist() == value.tolist(), key
        else:
            _close(mine[key], value, key)
