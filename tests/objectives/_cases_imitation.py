"""Contract-suite cases for the imitation and PILCO losses: DiffusionBCLoss, ACTLoss, ExponentialQuadraticCost."""

from __future__ import annotations

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from torch import nn

from tdrl.modules import DiffusionActor
from tdrl.modules.models import ACTModel
from tdrl.objectives import ACTLoss, DiffusionBCLoss, ExponentialQuadraticCost

OBS, ACT, B, CHUNK = 3, 2, 8, 4


def _score_net() -> nn.Module:
    return nn.Sequential(nn.Linear(ACT + OBS + 1, 16), nn.SiLU(), nn.Linear(16, ACT))


def diffusion_loss() -> DiffusionBCLoss:
    return DiffusionBCLoss(DiffusionActor(ACT, score_network=_score_net(), num_steps=5))


def diffusion_td() -> TensorDict:
    return TensorDict({"observation": torch.randn(B, OBS), "action": torch.rand(B, ACT) * 2 - 1}, [B])


def act_model() -> ACTModel:
    return ACTModel(OBS, ACT, CHUNK, hidden_dim=8, nheads=2, num_encoder_layers=1, num_decoder_layers=1,
                    latent_dim=4, dropout=0.0, dim_feedforward=16)


def act_loss() -> ACTLoss:
    actor = Mod(act_model(), ["observation", "action_chunk"], ["action_pred", "mu", "log_var"])
    return ACTLoss(actor, kl_weight=0.5)


def act_td() -> TensorDict:
    return TensorDict({"observation": torch.randn(B, OBS), ("vla_action", "chunk"): torch.randn(B, CHUNK, ACT)}, [B])


def cost_loss() -> ExponentialQuadraticCost:
    root = torch.randn(OBS, OBS)
    return ExponentialQuadraticCost(target=torch.randn(OBS), weights=root @ root.T + torch.eye(OBS))


def cost_td() -> TensorDict:
    # Non-leaf inputs that carry gradients: the cost has no parameters, it is differentiated in the belief.
    mean = torch.randn(B, OBS).requires_grad_(True) * 1.0
    root = torch.randn(B, OBS, OBS) * 0.3
    var = (root @ root.transpose(-2, -1) + 0.1 * torch.eye(OBS)).requires_grad_(True) * 1.0
    return TensorDict({("observation", "mean"): mean, ("observation", "var"): var}, [B])
