"""Scenarios shared by ``record_torchrl_golden_imitation.py`` (run on TorchRL 0.14.1) and
``test_golden_torchrl_imitation.py`` (run on tdrl): DiffusionActor / DiffusionBCLoss, ACTModel / ACTLoss,
RBFController, ExponentialQuadraticCost and KLAdaptiveLR.

``run(lib)`` builds each component from ``lib`` (a namespace holding the library's ``modules``,
``modules.models`` and ``objectives``), overwrites every parameter with values drawn from a fixed generator
in name order (so both libraries hold the same weights whatever their initialisation order), and returns
outputs and gradients under fixed seeds.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModule, set_interaction_type
from torch import nn

OBS, ACT, B, CHUNK = 3, 2, 5, 4


def set_weights(module: nn.Module, seed: int) -> None:
    """Overwrites every parameter (sorted by name) with ``0.3 * N(0, 1)`` draws from a seeded generator."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(module.named_parameters(), key=lambda kv: kv[0]):
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)


def digest(grad: torch.Tensor) -> torch.Tensor:
    """A compact fingerprint of a gradient (the 256-wide default score network would make the file large):
    its first 8 entries, its sum and its projections on two fixed random directions."""
    g = torch.Generator().manual_seed(0)
    flat = grad.detach().flatten()
    proj = torch.randn(2, flat.numel(), generator=g, dtype=flat.dtype) @ flat
    return torch.cat([flat[:8], flat.sum().reshape(1), proj])


def _grads(params: Any) -> dict[str, torch.Tensor]:
    flat = params.flatten_keys(".")
    return {k: digest(flat.get(k).grad) for k in flat.keys() if flat.get(k).grad is not None}


def _named_grads(module: nn.Module) -> dict[str, torch.Tensor]:
    return {n: digest(p.grad) for n, p in module.named_parameters() if p.grad is not None}


def _inputs(seed: int) -> TensorDict:
    g = torch.Generator().manual_seed(seed)
    return TensorDict(
        {
            "observation": torch.randn(B, OBS, generator=g),
            "action": torch.randn(B, ACT, generator=g).clamp(-1, 1),
            ("vla_action", "chunk"): torch.randn(B, CHUNK, ACT, generator=g),
        },
        [B],
    )


def diffusion(lib: Any) -> dict[str, Any]:
    actor = lib.modules.DiffusionActor(action_dim=ACT, obs_dim=OBS, num_steps=6)
    set_weights(actor, 10)
    td = _inputs(0)
    out: dict[str, Any] = {}
    torch.manual_seed(1)
    out["sampled"] = actor(td.select("observation").clone())["action"].detach()
    with set_interaction_type(InteractionType.DETERMINISTIC):
        action = actor(td.select("observation").clone())["action"]
    out["deterministic"] = action.detach()
    action.pow(2).sum().backward()
    out["actor_grads"] = _named_grads(actor)
    actor.zero_grad()
    for reduction in ("mean", "sum", "none"):
        loss = lib.objectives.DiffusionBCLoss(actor, reduction=reduction)
        torch.manual_seed(2)
        value = loss(td.clone())["loss_diffusion_bc"]
        out[f"loss_{reduction}"] = value.detach()
        if reduction == "mean":
            value.backward()
            out["loss_grads"] = _grads(loss.actor_network_params)
    return out


def act(lib: Any) -> dict[str, Any]:
    model = lib.modules.models.ACTModel(
        OBS, ACT, CHUNK, hidden_dim=8, nheads=2, num_encoder_layers=1, num_decoder_layers=2, latent_dim=4,
        dropout=0.0, dim_feedforward=16,
    )
    set_weights(model, 11)
    td = _inputs(3)
    out: dict[str, Any] = {}
    torch.manual_seed(4)
    out["train"] = [t.detach() for t in model(td["observation"], td["vla_action", "chunk"])]
    out["prior"] = [t.detach() for t in model(td["observation"])]
    actor = TensorDictModule(model, ["observation", "action_chunk"], ["action_pred", "mu", "log_var"])
    for reduction in ("mean", "sum", "none"):
        loss = lib.objectives.ACTLoss(actor, kl_weight=0.5, reduction=reduction)
        torch.manual_seed(5)
        values = loss(td.clone())
        out[f"loss_{reduction}"] = {k: v.detach() for k, v in values.items()}
        if reduction == "mean":
            values["loss_act"].backward()
            out["loss_grads"] = _grads(loss.actor_network_params)
    return out


def _belief(seed: int, batch: tuple[int, ...] = (B,)) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    mean = torch.randn(*batch, OBS, generator=g)
    root = torch.randn(*batch, OBS, OBS, generator=g) * 0.4
    return mean, root @ root.transpose(-2, -1) + 0.05 * torch.eye(OBS)


def rbf(lib: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, bound in (("squashed", torch.tensor([1.0, 2.0])), ("plain", None)):
        ctrl = lib.modules.RBFController(OBS, ACT, max_action=bound, n_basis=4)
        set_weights(ctrl, 12)
        with torch.no_grad():
            ctrl.lengthscales.abs_().add_(0.5)
        mean, cov = _belief(6, (2, B))
        mean.requires_grad_(True)
        cov.requires_grad_(True)
        am, ac, cc = ctrl(mean, cov)
        out[name] = [am.detach(), ac.detach(), cc.detach()]
        g = torch.Generator().manual_seed(7)
        (sum((t * torch.randn(t.shape, generator=g)).sum() for t in (am, ac, cc))).backward()
        out[f"{name}_grads"] = {**_named_grads(ctrl), "mean": mean.grad.clone(), "cov": cov.grad.clone()}
    mean, cov = _belief(8)
    out["squash_sin"] = [t.detach() for t in lib.modules.RBFController.squash_sin(mean[:, :2], cov[:, :2, :2], 1.5)]
    return out


def cost(lib: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    mean, cov = _belief(9)
    g = torch.Generator().manual_seed(10)
    root = torch.randn(OBS, OBS, generator=g)
    settings = {"default": {}, "weighted": {"target": torch.randn(OBS, generator=g), "weights": root @ root.T}}
    for name, kwargs in settings.items():
        for reduction in ("mean", "sum", "none"):
            m, s = mean.clone().requires_grad_(True), cov.clone().requires_grad_(True)
            loss = lib.objectives.ExponentialQuadraticCost(**kwargs, reduction=reduction)
            value = loss(TensorDict({("observation", "mean"): m, ("observation", "var"): s}, [B]))["loss_cost"]
            value.sum().backward()
            out[f"{name}_{reduction}"] = [value.detach(), m.grad.clone(), s.grad.clone()]
    return out


def kl_lr(lib: Any) -> list[float]:
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1e-3)
    sched = lib.objectives.KLAdaptiveLR(opt, 0.01, factor=2.0, min_lr=2e-4, max_lr=5e-3)
    lrs = []
    for kl in (0.05, 0.05, 0.05, 0.0, 0.001, 0.001, 0.001, 0.001, 0.001, 0.01, torch.tensor(0.03)):
        sched.step(kl)
        lrs.append(sched.get_last_lr()[0])
    return lrs


def run(lib: Any) -> dict[str, Any]:
    """Every scenario's outputs and gradients."""
    return {"diffusion": diffusion(lib), "act": act(lib), "rbf": rbf(lib), "cost": cost(lib), "kl_lr": kl_lr(lib)}
