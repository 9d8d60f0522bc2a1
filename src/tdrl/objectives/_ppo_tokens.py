"""The token-data path of the PPO losses: an LLM policy (no critic) scored on ``("tokens", "full")``.

TorchRL 0.14.1's ``ClipPPOLoss`` accepts an LLM wrapper as its actor: it takes the keys the wrapper reports,
calls ``get_dist`` and scores the stored tokens. tdrl does the same, and additionally (i) reads ragged
(``pad_output=False``) entries as left-padded tensors, (ii) scores only the tokens of the wrapper's response
mask (``_get_sft_dist`` when the wrapper has it: prompt tokens are not actions) and (iii) averages the loss
terms and diagnostics over those tokens only. See ``docs/differences.md``.

The PPO losses switch to this path once, at construction (:func:`is_token_policy`), so the usual path
pays nothing for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.objectives._tokens import MaskedTokenDist, masked_mean, padded_entry, token_advantage

if TYPE_CHECKING:
    from tdrl.objectives._ppo import PPOLoss

__all__ = ["TOKEN_KEYS", "is_token_policy", "token_ppo_forward"]

TOKEN_KEYS = {"action": ("tokens", "full"), "sample_log_prob": ("log_probs", "full")}


def is_token_policy(actor: object) -> bool:
    """Whether ``actor`` is an LLM policy wrapper (it exposes the masked token distributions the LLM losses
    use), as opposed to a ``ProbabilisticActor``.

    Examples:
        >>> is_token_policy(torch.nn.Linear(2, 2))
        False
    """
    return callable(getattr(actor, "_get_sft_dist", None)) and callable(getattr(actor, "get_dist", None))


def _token_dist(loss: PPOLoss, td: TensorDictBase) -> MaskedTokenDist:
    actor = loss.actor_network
    with loss._swap("actor_network", "params"):
        return actor._get_sft_dist(td)


def _advantage(loss: PPOLoss, td: TensorDictBase, ndim: int) -> Tensor:
    return loss._normalized_advantage(token_advantage(loss, td, ndim), td)


def _log_probs(loss: PPOLoss, td: TensorDictBase) -> tuple[Tensor, Tensor, Tensor, MaskedTokenDist]:
    """``(current, stored, mask, dist)``: current and stored log-probs of the masked tokens (0 elsewhere)."""
    k = loss._tensor_keys
    # Token batches carry one log-prob entry (("log_probs", "full")), never a composite list of keys.
    action_key, lp_key = cast(NestedKey, k.action), cast(NestedKey, k.sample_log_prob)
    dist = _token_dist(loss, td)
    action = padded_entry(td, action_key, padding_side="left", padding_value=-100)
    if action is None:
        raise loss._missing(action_key, td)
    cur = dist.log_prob(action)
    prev = padded_entry(td, lp_key, padding_side="left", padding_value=0.0)
    if prev is None:
        raise loss._missing(lp_key, td)
    if prev.requires_grad:
        raise RuntimeError(f"the stored log-probability {k.sample_log_prob!r} requires grad; detach it first")
    if prev.shape != cur.shape:
        raise ValueError(
            f"{type(loss).__name__}: stored log-probs {k.sample_log_prob!r} have shape {tuple(prev.shape)}, the "
            f"current ones {tuple(cur.shape)}: store ('log_probs', 'full'), aligned with ('tokens', 'full')."
        )
    mask = dist.mask & torch.isfinite(prev)
    zero = torch.zeros((), dtype=cur.dtype, device=cur.device)
    return torch.where(mask, cur, zero), torch.where(mask, prev, zero), mask, dist


def token_ppo_forward(loss: PPOLoss, tensordict: TensorDictBase) -> TensorDict:
    """The PPO loss terms on token data; every term is averaged over the response tokens."""
    td = tensordict.copy()
    cur, prev, mask, dist = _log_probs(loss, td)
    log_weight = (cur - prev).unsqueeze(-1)
    advantage = _advantage(loss, td, log_weight.ndim)
    out: dict[str, Tensor] = {}
    loss._objective(log_weight, advantage, None, out)
    with torch.no_grad():
        out["kl_approx"] = masked_mean(prev - cur, mask)
        if "ESS" in out:  # ClipPPOLoss's diagnostics, over the response tokens
            lw = torch.where(mask, cur - prev, torch.full((), float("-inf"), dtype=cur.dtype, device=cur.device))
            flat = lw.reshape(-1)
            out["ESS"] = (2 * flat.logsumexp(0) - (2 * flat).logsumexp(0)).exp() / mask.sum().clamp_min(1)
            ratio = (cur - prev).exp()
            out["max_ratio"] = torch.where(mask, ratio, torch.zeros((), dtype=cur.dtype)).max()
            out["mean_ratio"] = masked_mean(ratio, mask)
            clipped = log_weight.clamp(*loss._clip_bounds())
            out["clip_fraction"] = masked_mean((clipped != log_weight).squeeze(-1).to(cur.dtype), mask)
    if loss.entropy_bonus:
        entropy = dist.entropy()
        out["entropy"] = masked_mean(entropy.detach(), mask)
        out["loss_entropy"] = -loss.entropy_coeff * entropy.unsqueeze(-1)
    for key in list(out):
        if key.startswith("loss_"):
            value = out[key]
            if loss.reduction == "none":
                out[key] = torch.where(mask.unsqueeze(-1), value, torch.zeros((), dtype=value.dtype))
            elif loss.reduction == "sum":
                out[key] = torch.where(mask.unsqueeze(-1), value, torch.zeros((), dtype=value.dtype)).sum()
            else:
                out[key] = masked_mean(value, mask)
    return loss._finalize(td, out)
