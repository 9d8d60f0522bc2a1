"""GRPO-family scenarios run identically by the TorchRL recorder and the tdrl golden tests."""

from __future__ import annotations

import torch

try:  # imported as a test-package module (pytest) or from the recorder's sys.path (TorchRL interpreter)
    from ._actor import TinyTokenActor, to_tensordict, token_batch
except ImportError:
    from _actor import TinyTokenActor, to_tensordict, token_batch

# name -> (loss class name, constructor kwargs, per-token advantage)
SCENARIOS: dict[str, tuple[str, dict, bool]] = {
    "grpo_default": ("GRPOLoss", {}, False),
    "grpo_asym_prompt_mean": ("GRPOLoss", {"clip_epsilon": (0.1, 0.3), "aggregation": "prompt_mean"}, False),
    "grpo_generic_token_adv": ("GRPOLoss", {"masking_strategy": "generic"}, True),
    "grpo_rlhf": ("GRPOLoss", {"masking_strategy": "rlhf", "entropy_coeff": 0.05}, False),
    "grpo_none": ("GRPOLoss", {"aggregation": "none"}, False),
    "grpo_kl": ("GRPOLoss", {"kl_to_ref_coeff": 0.1, "kl_to_inference_coeff": 0.05}, False),
    "grpo_kl_mask": ("GRPOLoss", {"kl_mask_threshold": 0.02}, False),
    "grpo_no_entropy": ("GRPOLoss", {"entropy_bonus": False, "clip_epsilon": 0.1}, False),
    "dapo": ("DAPO", {"clip_epsilon": (0.2, 0.28)}, False),
    "cispo": ("CISPOLoss", {"clip_epsilon": (0.1, 0.1)}, True),
}

FIELDS = (
    "loss_objective", "clip_fraction", "kl_approx", "ESS", "entropy", "loss_entropy",
    "loss_kl_to_ref", "kl_to_ref", "loss_kl_to_inference", "kl_to_inference",
)


def build(losses_module, td_cls, dist_cls, name: str):
    """``(loss, actor, td)`` for scenario ``name`` with ``losses_module`` (torchrl's or tdrl's objectives.llm)."""
    cls_name, kwargs, per_token = SCENARIOS[name]
    actor = TinyTokenActor(dist_cls=dist_cls)
    loss = getattr(losses_module, cls_name)(actor, **kwargs)
    td = to_tensordict(token_batch(seed=1), td_cls, per_token_advantage=per_token)
    return loss, actor, td


def run(losses_module, td_cls, dist_cls, name: str) -> dict:
    """Output values and the gradients of ``loss_objective`` (and of ``loss_entropy``) w.r.t. the actor."""
    loss, actor, td = build(losses_module, td_cls, dist_cls, name)
    out = loss(td)
    values = {f: getattr(out, f).detach().clone() for f in FIELDS if getattr(out, f, None) is not None}
    grads = {}
    for term in ("loss_objective", "loss_entropy"):
        value = getattr(out, term, None)
        if value is None:
            continue
        g = torch.autograd.grad(value.sum(), list(actor.parameters()), retain_graph=True, allow_unused=True)
        grads[term] = [torch.zeros_like(p) if x is None else x for x, p in zip(g, actor.parameters())]
    return {"values": values, "grads": grads}
