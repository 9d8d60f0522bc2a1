"""DreamerV3Optimizer, DreamerV3OptimizationStepper and DreamerV3UpdateRatio (tdrl.trainers.algorithms.dreamer_v3),
against TorchRL 0.14.1 where numbers are involved (golden file of tests/objectives/record_dreamer_v3_golden.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tdrl.objectives import SoftUpdate
from tdrl.trainers.algorithms import DreamerV3OptimizationStepper, DreamerV3Optimizer, DreamerV3UpdateRatio
from tests.objectives._dreamer_v3_scenario import batch, build, build_blocks, load, run_optimizer, run_stepper

GOLDEN = torch.load(Path(__file__).parents[1] / "objectives" / "dreamer_v3_torchrl_0_14_1.pt", weights_only=True)


def _close(got, expected, path: str = "") -> None:
    if isinstance(expected, dict):
        assert sorted(map(str, got)) == sorted(map(str, expected)), path
        for key, value in expected.items():
            _close(got[key], value, f"{path}/{key}")
    else:
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5, msg=path)


def test_optimizer_matches_torchrl() -> None:
    _close(run_optimizer("tdrl"), GOLDEN["optimizer"])


def test_optimizer_needs_gradients() -> None:
    with pytest.raises(RuntimeError, match="no parameter has a gradient"):
        DreamerV3Optimizer([torch.nn.Parameter(torch.ones(2))]).step()


def test_stepper_matches_torchrl() -> None:
    torch.manual_seed(0)
    parts = build("tdrl")
    load(parts, build_blocks("tdrl"), GOLDEN["states"])
    _close(run_stepper(parts), GOLDEN["stepper"])


def test_stepper_warmup_does_not_train() -> None:
    torch.manual_seed(0)
    parts = build("tdrl")
    params = [p for p in parts.world_model.parameters()] + list(parts.actor.parameters())
    params += list(parts.value_loss.value_model_params.values(True, True))
    opt = DreamerV3Optimizer(list({id(p): p for p in params}.values()), lr=1e-3, warmup_steps=0)
    stepper = DreamerV3OptimizationStepper(parts.loss, opt, SoftUpdate(parts.value_loss, tau=0.1),
                                           compile_train_step=None, cudagraph=None, warmup_steps=1)
    compiled = DreamerV3OptimizationStepper(parts.loss, opt, compile_train_step=True, cudagraph=False)
    with pytest.raises(RuntimeError, match="warmup"):
        compiled.step(None, batch())
    before = [p.detach().clone() for p in opt.param_groups[0]["params"]]
    rng = torch.get_rng_state()
    stepper.warmup(batch())
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(a, b) for a, b in zip(before, opt.param_groups[0]["params"]))
    metrics = stepper.step(None, batch())
    assert torch.isfinite(metrics["loss_model_reco"])
    assert any(not torch.equal(a, b) for a, b in zip(before, opt.param_groups[0]["params"]))
    state = stepper.state_dict()
    assert set(state) == {"optimizer", "target_updater"} or set(state) == {"optimizer"}
    stepper.load_state_dict(state)


def test_update_ratio_schedule_and_state() -> None:
    ratio = DreamerV3UpdateRatio(0.5)
    assert [ratio(n) for n in (10, 11, 13, 20)] == [1, 0, 1, 4]
    saved = ratio.state_dict()
    other = DreamerV3UpdateRatio(3.0)
    other.load_state_dict(saved)
    assert other(24) == ratio(24) == 2
    ratio.reset(100)
    assert ratio(101) == 0
    assert DreamerV3UpdateRatio(0.0)(5) == 0


def test_stepper_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="warmup_steps"):
        DreamerV3OptimizationStepper(None, None, warmup_steps=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rssm_scan_unroll"):
        DreamerV3OptimizationStepper(None, None, rssm_scan_unroll=0)  # type: ignore[arg-type]
