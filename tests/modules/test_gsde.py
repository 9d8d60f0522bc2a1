"""gSDEModule / LazygSDEModule: per-episode noise in rollouts, redraw on reset, modes and errors."""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import InteractionType, set_interaction_type
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq
from torch import nn

from tdrl.envs import GymEnv, StepCounter, TransformedEnv, gSDENoise
from tdrl.modules import LazygSDEModule, gSDEModule
from tdrl.modules.models import exploration


def test_torchrl_import_path() -> None:
    assert exploration.gSDEModule is gSDEModule and exploration.LazygSDEModule is LazygSDEModule


def _policy(module: nn.Module) -> Seq:
    return Seq(
        Mod(nn.Linear(3, 1), ["observation"], ["mu"]),
        Mod(module, ["mu", "observation", "_eps_gSDE"], ["loc", "scale", "action", "_eps_gSDE"]),
    )


def test_noise_is_fixed_within_an_episode_and_redrawn_on_reset() -> None:
    env = TransformedEnv(GymEnv("Pendulum-v1"), gSDENoise(state_dim=3, action_dim=1))
    env.append_transform(StepCounter(max_steps=4))
    env.set_seed(0)
    policy = _policy(gSDEModule(1, 3))
    with set_interaction_type(InteractionType.RANDOM), torch.no_grad():
        rollout = env.rollout(8, policy, break_when_any_done=False)
    eps = rollout["_eps_gSDE"]
    assert (eps[1:4] == eps[0]).all() and (eps[5:] == eps[4]).all()
    assert not torch.equal(eps[4], eps[0])
    noise = rollout["action"] - rollout["mu"]
    assert (noise != 0).all()  # state-dependent noise: it changes with the state, not only at resets
    assert not torch.allclose(noise[1], noise[0])


def test_zero_rows_are_redrawn_alone_and_placeholders_checked() -> None:
    module = gSDEModule(2, 3)
    mu, state = torch.zeros(3, 2), torch.randn(3, 3)
    with set_interaction_type(InteractionType.RANDOM):
        eps = module(mu, state, torch.zeros(3, 1))[3]
        partial = eps.clone()
        partial[1] = 0  # batch element 1 was reset
        new = module(mu, state, partial)[3]
        assert torch.equal(new[0], eps[0]) and torch.equal(new[2], eps[2]) and (new[1] != 0).all()
        with pytest.raises(RuntimeError, match="reset placeholder"):
            module(mu, state, torch.ones(3, 1))
        with pytest.raises(RuntimeError, match="expected"):
            module(mu, state, torch.ones(3, 3, 3))
        with pytest.raises(RuntimeError, match="batch dimensions"):
            module(mu, torch.randn(4, 3), None)
    with set_interaction_type(InteractionType.DETERMINISTIC):
        _, scale, action, eps = module(mu, state, None)
    assert torch.equal(action, mu) and (eps == 0).all() and (scale > 0).all()


def test_lazy_module_sizes_sigma_from_the_first_state() -> None:
    module = LazygSDEModule(learn_sigma=False)
    state = torch.randn(256, 4) * torch.tensor([1.0, 2.0, 4.0, 8.0])
    with pytest.raises(RuntimeError, match="exploration type None"):  # as TorchRL: no mode set, no behaviour
        module(torch.zeros(256, 2), state, None)
    with set_interaction_type(InteractionType.MODE):
        module(torch.zeros(256, 2), state, None)
    assert isinstance(module, gSDEModule) and module.sigma.shape == (2, 4)
    # Initial sigma ~ 1 / (sqrt(state_dim) * rms(state)): each feature contributes about equally.
    contrib = (module.sigma * state.pow(2).mean(0).sqrt()).pow(2).sum(-1)
    torch.testing.assert_close(contrib, torch.ones(2), rtol=1e-4, atol=1e-4)
