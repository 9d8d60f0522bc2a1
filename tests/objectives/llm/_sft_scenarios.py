"""SFTLoss scenarios run identically by the TorchRL recorder and the tdrl golden tests.

The stand-in actor scores ``("tokens", "full")``, so the loss's history key is pointed there and the
assistant masks are given in the batch (no chat template, no tokenizer call)."""

from __future__ import annotations

import torch
from tensordict import TensorDict, lazy_stack

try:  # imported as a test-package module (pytest) or from the recorder's sys.path (TorchRL interpreter)
    from ._actor import TinyTokenActor, to_tensordict, token_batch
except ImportError:
    from _actor import TinyTokenActor, to_tensordict, token_batch

SFT_SCENARIOS: dict[str, dict] = {
    "sft_mean": {},
    "sft_sum_unnormalized": {"reduction": "sum", "normalize_by_seq_length": False},
    "sft_none_kl": {"reduction": "none", "kl_to_ref_coeff": 0.1},
    "minor_sft": {"loss_function": "minor_sft", "beta": 0.5},
}


def build_sft(sft_cls, name: str):
    actor = TinyTokenActor()
    loss = sft_cls(actor, tokenizer="unused: masks are in the batch", **SFT_SCENARIOS[name])
    loss.set_keys(history=("tokens", "full"))
    raw = token_batch(seed=2)
    td = to_tensordict(raw, TensorDict)
    # reference log-probs as a reference model would give them for the assistant tokens only
    td["next", "ref_log_probs", "full"] = torch.where(raw["assistant"], raw["ref_log_probs"], 0.0)
    # a lazy stack of samples, as collected chat data is (TorchRL's KL path needs per-sample lists)
    return loss, actor, lazy_stack(list(td.unbind(0)))


def run_sft(sft_cls, name: str) -> dict:
    loss, actor, td = build_sft(sft_cls, name)
    out = loss(td)
    values = {f: getattr(out, f).detach().clone() for f in ("loss_sft", "loss_kl_to_ref", "kl_to_ref")
              if getattr(out, f, None) is not None}
    grads = torch.autograd.grad(out.loss_sft.sum(), list(actor.parameters()))
    return {"values": values, "grads": list(grads)}
