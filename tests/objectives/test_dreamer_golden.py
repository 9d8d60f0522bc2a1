"""Dreamer blocks, losses, gradients and the planners against TorchRL 0.14.1 (``dreamer_torchrl_0_14_1.pt``,
written by ``record_dreamer_golden.py`` from the same scenario and weights)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ._dreamer_scenario import build_dreamer, load, planners, run_dreamer

GOLDEN = torch.load(Path(__file__).with_name("dreamer_torchrl_0_14_1.pt"), weights_only=True)


@pytest.fixture(scope="module")
def ours() -> dict:
    torch.manual_seed(0)
    parts = build_dreamer("tdrl")
    load(parts, GOLDEN["states"])
    return run_dreamer(parts)


def test_state_dict_layout_matches() -> None:
    parts = build_dreamer("tdrl")
    for name, state in GOLDEN["states"].items():
        mine = getattr(parts, name).state_dict()
        assert list(mine.keys()) == list(state.keys()), name
        assert all(mine[k].shape == v.shape for k, v in state.items()), name


@pytest.mark.parametrize("block", ["prior", "posterior", "encoder", "decoder", "actor_net"])
def test_blocks(ours: dict, block: str) -> None:
    torch.testing.assert_close(ours[block], GOLDEN["dreamer"][block])


@pytest.mark.parametrize(
    "entry", ["model_losses", "posterior_state", "actor_loss", "lambda_target", "imagined_action", "value_loss"]
)
def test_loss_values(ours: dict, entry: str) -> None:
    torch.testing.assert_close(ours[entry], GOLDEN["dreamer"][entry], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("grads", ["model_grads", "actor_grads", "actor_loss_world_model_grads", "value_grads"])
def test_gradients(ours: dict, grads: str) -> None:
    expected = GOLDEN["dreamer"][grads]
    assert sorted(ours[grads]) == sorted(expected)
    for name, g in expected.items():
        torch.testing.assert_close(ours[grads][name], g, rtol=1e-4, atol=1e-5, msg=name)


def test_actor_loss_trains_only_the_actor(ours: dict) -> None:
    # The imagination env and the value model are held out by the actor loss.
    assert ours["actor_loss_world_model_grads"] == {}
    assert ours["actor_grads"]


def test_planners_match_torchrl_with_same_seed() -> None:
    got = planners("tdrl")
    for name in ("cem", "mppi"):
        torch.testing.assert_close(got[name], GOLDEN["planners"][name], msg=name)


def _lambda_return(reward: torch.Tensor, next_value: torch.Tensor, gamma: float, lmbda: float) -> torch.Tensor:
    """Reference TD(lambda) loop along dim -2, never done."""
    out = torch.empty_like(reward)
    ret = next_value[..., -1, :]
    for t in range(reward.shape[-2] - 1, -1, -1):
        bootstrap = next_value[..., t, :] if t == reward.shape[-2] - 1 else (1 - lmbda) * next_value[..., t, :] + lmbda * ret
        ret = reward[..., t, :] + gamma * bootstrap
        out[..., t, :] = ret
    return out


def test_tdlambda_actor_loss_uses_lambda_returns() -> None:
    """With its default TD(lambda) estimator, TorchRL 0.14.1 returns one-step targets ``r + gamma * V(s')``
    (its lambda_target tensordict has no batch dims, so time resolves to the reward's feature dim);
    tdrl returns lambda-returns along time (docs/differences.md)."""
    gold = GOLDEN["dreamer_tdlambda"]
    torch.manual_seed(0)
    parts = build_dreamer("tdrl", "tdlambda")
    load(parts, GOLDEN["states"])
    got = run_dreamer(parts)
    # Same imagined trajectory and values in both libraries.
    for key in ("imagined_action", "imagined_reward", "next_value"):
        torch.testing.assert_close(got[key], gold[key], rtol=1e-4, atol=1e-5, msg=key)
    reward, next_value = gold["imagined_reward"], gold["next_value"]
    torch.testing.assert_close(gold["lambda_target"], reward + 0.9 * next_value)
    expected = _lambda_return(reward, next_value, 0.9, 0.8)
    torch.testing.assert_close(got["lambda_target"], expected, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(expected, reward + 0.9 * next_value)
