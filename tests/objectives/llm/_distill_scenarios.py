"""DistillationLoss scenarios run identically by the TorchRL recorder and the tdrl golden tests.

The stand-in student scores ``("tokens", "full")`` (the loss's history key points there); the masks are in the
batch and the teacher log-probs are the reference log-probs of ``token_batch``."""

from __future__ import annotations

import torch
from tensordict import TensorDict, lazy_stack

try:  # imported as a test-package module (pytest) or from the recorder's sys.path (TorchRL interpreter)
    from ._actor import TinyTokenActor, to_tensordict, token_batch
except ImportError:
    from _actor import TinyTokenActor, to_tensordict, token_batch

DISTILL_SCENARIOS: dict[str, dict] = {
    "reverse_mean": {},
    "forward_sum_unnormalized": {"kl_direction": "forward", "reduction": "sum", "normalize_by_seq_length": False},
    "reverse_none_all_tokens": {"reduction": "none", "assistant_only": False},
}


def build_distill(loss_cls, name: str):
    student = TinyTokenActor(seed=1)
    loss = loss_cls(student, tokenizer="unused: masks are in the batch", **DISTILL_SCENARIOS[name])
    loss.set_keys(history=("tokens", "full"))
    raw = token_batch(seed=3)
    td = to_tensordict(raw, TensorDict)
    td["next", "teacher_log_probs", "full"] = raw["ref_log_probs"]
    return loss, student, lazy_stack(list(td.unbind(0)))


def run_distill(loss_cls, name: str) -> dict:
    loss, student, td = build_distill(loss_cls, name)
    out = loss(td)
    values = {f: getattr(out, f).detach().clone() for f in ("loss_distill", "kl_to_teacher")}
    grads = torch.autograd.grad(out.loss_distill.sum(), list(student.parameters()))
    return {"values": values, "grads": list(grads)}
