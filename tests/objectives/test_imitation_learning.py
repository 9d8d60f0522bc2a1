"""Learning smoke checks: DiffusionBCLoss and ACTLoss fit a tiny behaviour-cloning dataset (the loss falls
clearly within a few hundred steps), and ExponentialQuadraticCost drives a belief's mean onto its target."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type
from tensordict.nn import TensorDictModule as Mod
from torch import nn

from tdrl.modules import DiffusionActor
from tdrl.modules.models import ACTModel
from tdrl.objectives import ACTLoss, DiffusionBCLoss, ExponentialQuadraticCost


def _expert(obs: torch.Tensor) -> torch.Tensor:
    return torch.tanh(obs @ torch.tensor([[1.0, -0.5], [0.5, 1.0]]))


@pytest.mark.slow
def test_diffusion_bc_fits_a_tiny_dataset() -> None:
    torch.manual_seed(0)
    obs = torch.randn(64, 2)
    data = TensorDict(observation=obs, action=_expert(obs), batch_size=[64])
    net = nn.Sequential(nn.Linear(2 + 2 + 1, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 2))
    actor = DiffusionActor(2, score_network=net, num_steps=10, beta_end=0.2)
    loss_fn = DiffusionBCLoss(actor)
    opt = torch.optim.Adam(loss_fn.parameters(), lr=3e-3)
    history = []
    for _ in range(300):
        loss = loss_fn(data)["loss_diffusion_bc"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss.item())
    first, last = sum(history[:30]) / 30, sum(history[-30:]) / 30
    # Predicting zero noise scores ~1; a fitted noise model scores far lower.
    assert last < 0.5 * first, (first, last)
    policy = loss_fn.get_stateful_net("actor_network")
    with torch.no_grad(), set_interaction_type(InteractionType.DETERMINISTIC):
        err = (policy(data.select("observation"))["action"] - data["action"]).pow(2).mean()
    # The denoised actions approach the expert's (their variance is ~0.35).
    assert err < 0.1, err


@pytest.mark.slow
def test_act_fits_a_tiny_dataset() -> None:
    torch.manual_seed(0)
    obs = torch.randn(32, 3)
    chunk = torch.stack([_expert(obs[:, :2] * (1 + 0.3 * k)) for k in range(4)], dim=1)
    data = TensorDict({"observation": obs, ("vla_action", "chunk"): chunk}, [32])
    model = ACTModel(3, 2, 4, hidden_dim=16, nheads=2, num_encoder_layers=1, num_decoder_layers=1, latent_dim=4,
                     dropout=0.0, dim_feedforward=32)
    loss_fn = ACTLoss(Mod(model, ["observation", "action_chunk"], ["action_pred", "mu", "log_var"]), kl_weight=0.1)
    opt = torch.optim.Adam(loss_fn.parameters(), lr=3e-3)
    history = []
    for _ in range(200):
        out = loss_fn(data)
        opt.zero_grad()
        out["loss_act"].backward()
        opt.step()
        history.append(out["loss_reconstruction"].item())
    first, last = sum(history[:20]) / 20, sum(history[-20:]) / 20
    assert last < 0.4 * first, (first, last)


def test_expected_cost_pulls_the_mean_to_the_target() -> None:
    target = torch.tensor([0.5, -1.0])
    cost = ExponentialQuadraticCost(target=target)
    mean = torch.zeros(1, 2, requires_grad=True)
    var = torch.eye(2).expand(1, 2, 2) * 0.1
    opt = torch.optim.SGD([mean], lr=0.5)
    for _ in range(200):
        value = cost(TensorDict({("observation", "mean"): mean, ("observation", "var"): var}, [1]))["loss_cost"]
        opt.zero_grad()
        value.backward()
        opt.step()
    torch.testing.assert_close(mean.detach()[0], target, atol=1e-2, rtol=0)
