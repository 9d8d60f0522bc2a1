"""Tests for the exploration modules: exploration-type gating, annealing, masks, OU resets."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictSequential, set_interaction_type
from torch import nn

from tdrl.data import Bounded, Categorical, OneHot
from tdrl.modules import (
    Actor,
    AdditiveGaussianModule,
    EGreedyModule,
    OrnsteinUhlenbeckProcessModule,
    RandomPolicy,
)

NO_NOISE = [InteractionType.DETERMINISTIC, InteractionType.MODE, InteractionType.MEAN]


def action_td(n=64, dim=2) -> TensorDict:
    return TensorDict(action=torch.zeros(n, dim), batch_size=[n])


class TestEGreedy:
    def test_annealing(self):
        mod = EGreedyModule(Categorical(4), eps_init=1.0, eps_end=0.1, annealing_num_steps=10)
        mod.step()
        torch.testing.assert_close(mod.eps, torch.tensor(0.91))
        mod.step(4)
        torch.testing.assert_close(mod.eps, torch.tensor(0.55))
        mod.step(100)
        torch.testing.assert_close(mod.eps, torch.tensor(0.1))
        with pytest.raises(ValueError, match="decrease"):
            EGreedyModule(Categorical(4), eps_init=0.1, eps_end=0.5)

    def test_exploration_type_gating(self):
        mod = EGreedyModule(Categorical(4), eps_init=1.0)
        td = TensorDict(action=torch.full((256,), 3), batch_size=[256])
        for kind in NO_NOISE:
            with set_interaction_type(kind):
                assert (mod(td.clone())["action"] == 3).all()
        with set_interaction_type(InteractionType.RANDOM):
            explored = mod(td.clone())["action"]
        assert (explored != 3).any() and ((explored >= 0) & (explored < 4)).all()

    def test_eps_zero_keeps_greedy_action(self):
        mod = EGreedyModule(OneHot(4), eps_init=0.0, eps_end=0.0)
        action = torch.nn.functional.one_hot(torch.full((32,), 2), 4)
        with set_interaction_type(InteractionType.RANDOM):
            assert torch.equal(mod(TensorDict(action=action, batch_size=[32]))["action"], action)

    def test_action_mask_respected(self):
        mod = EGreedyModule(Categorical(4), eps_init=1.0, action_mask_key="mask")
        mask = torch.tensor([False, True, False, True]).expand(500, 4)
        td = TensorDict(action=torch.full((500,), 1), mask=mask, batch_size=[500])
        with set_interaction_type(InteractionType.RANDOM):
            out = mod(td)["action"]
        assert ((out == 1) | (out == 3)).all() and (out == 3).any()
        with pytest.raises(KeyError, match="mask"):
            with set_interaction_type(InteractionType.RANDOM):
                mod(TensorDict(action=torch.full((5,), 1), batch_size=[5]))

    def test_in_policy(self):
        policy = TensorDictSequential(Actor(nn.Linear(3, 4), spec=OneHot(4)), EGreedyModule(OneHot(4), 0.5))
        td = policy(TensorDict(observation=torch.randn(8, 3), batch_size=[8]))
        assert td["action"].shape == (8, 4)


class TestAdditiveGaussian:
    def test_noise_gating_projection_and_annealing(self):
        mod = AdditiveGaussianModule(Bounded(-1.0, 1.0, (2,)), sigma_init=0.5, sigma_end=0.1, annealing_num_steps=4)
        for kind in NO_NOISE:
            with set_interaction_type(kind):
                assert (mod(action_td())["action"] == 0).all()
        with set_interaction_type(InteractionType.RANDOM):
            noisy = mod(action_td(n=4096))["action"]
        assert noisy.abs().max() <= 1 and 0.4 < noisy.std() < 0.6
        mod.step(2)
        torch.testing.assert_close(mod.sigma, torch.tensor(0.3))

    def test_lazy_spec(self):
        mod = AdditiveGaussianModule()
        with pytest.raises(RuntimeError, match="spec is not set"):
            with set_interaction_type(InteractionType.RANDOM):
                mod(action_td())
        mod.spec = Bounded(-0.1, 0.1, (2,))
        with set_interaction_type(InteractionType.RANDOM):
            assert mod(action_td())["action"].abs().max() <= 0.1


class TestOrnsteinUhlenbeck:
    def test_state_and_is_init_reset(self):
        mod = OrnsteinUhlenbeckProcessModule(Bounded(-10.0, 10.0, (2,)), sigma=1.0, dt=1.0, theta=0.0)
        td = action_td(n=3).set("is_init", torch.ones(3, 1, dtype=torch.bool))
        with set_interaction_type(InteractionType.RANDOM):
            td = mod(td)
            assert td["_ou_steps"].tolist() == [1, 1, 1]
            first_noise = td["_ou_prev_noise"].clone()
            td["action"] = torch.zeros(3, 2)
            td["is_init"] = torch.tensor([[False], [True], [False]])
            torch.manual_seed(5)
            increments = torch.randn(3, 2)
            torch.manual_seed(5)
            td = mod(td)
        assert td["_ou_steps"].tolist() == [2, 1, 2]
        # theta=0, dt=1, sigma=1: a random walk; the reset row restarts from zero.
        expected = first_noise * torch.tensor([[1.0], [0.0], [1.0]]) + increments
        torch.testing.assert_close(td["_ou_prev_noise"], expected)
        torch.testing.assert_close(td["action"], expected)  # eps=1: action = 0 + noise

    def test_gating_and_warning(self):
        mod = OrnsteinUhlenbeckProcessModule(Bounded(-1.0, 1.0, (2,)))
        with set_interaction_type(InteractionType.DETERMINISTIC):
            assert "_ou_steps" not in mod(action_td()).keys()
        with pytest.warns(UserWarning, match="is_init"):
            with set_interaction_type(InteractionType.RANDOM):
                mod(action_td())


def test_random_policy():
    td = RandomPolicy(Bounded(-1.0, 1.0, (3,)))(TensorDict())
    assert td["action"].shape == (3,) and td["action"].abs().max() <= 1
    with pytest.raises(RuntimeError, match="action_spec"):
        RandomPolicy()(TensorDict())
