"""DreamerV3 utilities, blocks, RSSM, losses and gradients against TorchRL 0.14.1 (``dreamer_v3_torchrl_0_14_1.pt``,
written by ``record_dreamer_v3_golden.py`` from the same scenario, weights and seeds)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ._dreamer_v3_scenario import (
    build,
    build_blocks,
    load,
    run_blocks,
    run_lambda_target,
    run_losses,
    run_rssm,
    run_seeded,
    run_utilities,
    run_variants,
)

GOLDEN = torch.load(Path(__file__).with_name("dreamer_v3_torchrl_0_14_1.pt"), weights_only=True)
TOL = {"rtol": 1e-4, "atol": 1e-5}


def _close(got, expected, path: str = "") -> None:
    if isinstance(expected, dict):
        assert sorted(map(str, got)) == sorted(map(str, expected)), path
        for key, value in expected.items():
            _close(got[key], value, f"{path}/{key}")
    else:
        torch.testing.assert_close(got, expected, **TOL, msg=path)


@pytest.fixture(scope="module")
def parts():
    torch.manual_seed(0)
    parts = build("tdrl")
    blocks = build_blocks("tdrl")
    load(parts, blocks, GOLDEN["states"])
    return parts, blocks


def test_state_dict_layout_matches() -> None:
    parts, blocks = build("tdrl"), build_blocks("tdrl")
    for name, module in {**parts.modules, **blocks}.items():
        mine, theirs = module.state_dict(), GOLDEN["states"][name]
        assert list(mine) == list(theirs), name
        assert all(mine[k].shape == v.shape for k, v in theirs.items()), name


def test_utilities() -> None:
    _close(run_utilities("tdrl"), GOLDEN["utilities"])


@pytest.fixture(scope="module")
def blocks(parts) -> dict:
    return run_blocks(parts[1])


@pytest.mark.parametrize("block", sorted(k for k in GOLDEN["blocks"] if not k.endswith("_grads")))
def test_blocks(blocks: dict, block: str) -> None:
    got = blocks
    _close(got[block], GOLDEN["blocks"][block], block)
    _close(got[block + "_grads"], GOLDEN["blocks"][block + "_grads"], block + "_grads")


def test_rssm_seeded(parts) -> None:
    got = run_rssm(parts[0])
    _close(got, GOLDEN["rssm"])
    # The tensor and TensorDict paths of RSSMRolloutV3 agree.
    _close(got["rollout_fast"], got["rollout_td"])


@pytest.fixture(scope="module")
def losses(parts) -> dict:
    return run_losses(parts[0])


@pytest.mark.parametrize("entry", ["losses", "replay_context", "actor_losses", "fake", "value_losses"])
def test_loss_values(losses: dict, entry: str) -> None:
    _close(losses[entry], GOLDEN["losses"][entry], entry)


@pytest.mark.parametrize("term", sorted(k for k in GOLDEN["losses"] if k.startswith("grads_")))
def test_gradients(losses: dict, term: str) -> None:
    _close(losses[term], GOLDEN["losses"][term], term)


def test_loss_variants(parts) -> None:
    _close(run_variants(parts[0]), GOLDEN["variants"])


def test_tdlambda_target_is_a_lambda_return(parts) -> None:
    """Without a continuation model TorchRL 0.14.1 returns one-step targets ``r + gamma * V(s')`` under its default
    TD(lambda) estimator (its target tensordict has no batch dims); tdrl returns lambda-returns along time, as
    with a continuation model of ones (docs/differences.md)."""
    from ._dreamer_v3_scenario import HORIZON, det

    reward, value = det(2, HORIZON, 1, scale=2.0), det(2, HORIZON, 1, phase=0.5)
    torch.testing.assert_close(GOLDEN["lambda_target"], reward + 0.9 * value)
    got = run_lambda_target(parts[0])
    expected = parts[0].actor_loss.lambda_target(reward, value, torch.ones_like(reward))
    torch.testing.assert_close(got, expected)
    assert not torch.allclose(got, reward + 0.9 * value)


def test_seeded_policy_draws_torchrl_actions(parts) -> None:
    # Same per-call seeds as TorchRL: same actions, and the caller's RNG stream is left as it was.
    _close(run_seeded(parts[0]), GOLDEN["seeded"])
