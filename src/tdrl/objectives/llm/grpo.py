"""GRPO-family losses on token data: :class:`GRPOLoss`, :class:`DAPO`, :class:`CISPOLoss` and their outputs.

The losses read the sampled tokens (``("tokens", "full")``), the log-probabilities stored at sampling time
(``("log_probs", "full")``, aligned with the tokens: entry ``i`` is ``log p(token_i | tokens before i)``)
and an ``"advantage"`` (per sequence or per token). The current log-probabilities come from the actor's
masked distribution (``get_dist`` and the ``_get_{sft,rlhf,generic}_dist`` helpers of the LLM wrappers), so
that only the tokens selected by ``masking_strategy`` enter the loss. No critic.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey
from torch import Tensor, nn

from tdrl._utils.tensorclass import NoCastTensorClass
from tdrl.objectives._tokens import MaskedTokenDist, token_advantage
from tdrl.objectives.common import LossModule
from tdrl.objectives.llm._utils import k3_kl_token_estimate, masked_mean, padded_entry

__all__ = [
    "CISPOLoss",
    "CISPOLossOutput",
    "DAPO",
    "DAPOLossOutput",
    "GRPOLoss",
    "GRPOLossOutput",
    "LLMLossOutput",
]

_AGGREGATIONS = ("token_mean", "prompt_mean", "none")
_MASKING = {"sft": "_get_sft_dist", "rlhf": "_get_rlhf_dist", "generic": "_get_generic_dist"}


class LLMLossOutput(NoCastTensorClass):
    """Output of the GRPO-family losses.

    ``loss_*`` entries are the terms to sum and back-propagate (``output.sum(reduce=True)`` or the sum of
    the ``loss_*`` fields); the others are detached diagnostics. Optional terms are ``None`` when disabled.

    Examples:
        >>> out = LLMLossOutput(loss_objective=torch.tensor(1.0), clip_fraction=torch.tensor(0.0),
        ...     kl_approx=torch.tensor(0.0), ESS=torch.tensor(1.0))
        >>> out.loss_entropy is None
        True
    """

    loss_objective: Tensor
    clip_fraction: Tensor
    kl_approx: Tensor
    ESS: Tensor
    entropy: Tensor | None = None
    loss_entropy: Tensor | None = None
    loss_kl_to_ref: Tensor | None = None
    kl_to_ref: Tensor | None = None
    loss_kl_to_inference: Tensor | None = None
    kl_to_inference: Tensor | None = None


class GRPOLossOutput(LLMLossOutput):
    """Output of :class:`GRPOLoss`."""


class DAPOLossOutput(LLMLossOutput):
    """Output of :class:`DAPO`."""


class CISPOLossOutput(LLMLossOutput):
    """Output of :class:`CISPOLoss`."""


def _clip_pair(clip_epsilon: float | tuple[float, float] | list[float]) -> tuple[float, float]:
    if isinstance(clip_epsilon, (tuple, list)):
        if len(clip_epsilon) != 2:
            raise ValueError(f"clip_epsilon tuple must have length 2 (eps_low, eps_high), got {clip_epsilon}.")
        low, high = float(clip_epsilon[0]), float(clip_epsilon[1])
    else:
        low = high = float(clip_epsilon)
    if low < 0 or high < 0:
        raise ValueError(f"clip_epsilon values must be non-negative, got ({low}, {high}).")
    if low >= 1.0:
        raise ValueError(f"clip_epsilon low must be < 1 (so that 1 - eps_low > 0), got {low}.")
    return low, high


class GRPOLoss(LossModule["GRPOLoss._AcceptedKeys"]):
    """Group Relative Policy Optimisation loss on token data (Shao et al., 2024, https://arxiv.org/abs/2402.03300).

    Per token ``t`` of the masked positions, with ``w_t = pi(tok_t) / pi_old(tok_t)`` and the advantage ``A``
    of the sequence (or of the token)::

        loss_objective = -min(w_t * A, clip(w_t, 1 - eps_low, 1 + eps_high) * A)

    aggregated over the tokens by ``aggregation``; optional entropy bonus and k3 KL penalties to a reference
    policy (``kl_to_ref_coeff``) and to the sampling policy (``kl_to_inference_coeff``).

    Args:
        actor_network: the policy in scoring mode (``generate=False``): an LLM wrapper exposing
            ``get_dist`` (and ``_get_sft_dist`` / ``_get_rlhf_dist`` / ``_get_generic_dist``).

    Keyword Args:
        clip_epsilon: symmetric threshold (default 0.2) or ``(eps_low, eps_high)`` (DAPO clip-higher).
        kl_mask_threshold: drop tokens with ``0.5 * (log pi - log pi_old) ** 2`` above this value (KL-Mask).
        aggregation: ``"token_mean"`` (default: masked mean over all tokens of the batch), ``"prompt_mean"``
            (masked mean per sequence, then mean over sequences) or ``"none"`` (per-token terms, zero outside
            the mask).
        entropy_bonus: add ``loss_entropy = -entropy_coeff * entropy`` (default ``True``).
        samples_mc_entropy: kept for TorchRL's signature; token distributions have an exact entropy.
        entropy_coeff: entropy multiplier (default 0.01).
        gamma, clip_value: kept for TorchRL's signature; GRPO has no value function, they must be ``None``.
        reduction: ``"mean"`` (default; the mean is the one ``aggregation`` names), ``"sum"`` (masked sum over
            tokens) or ``"none"`` (as ``aggregation="none"``).
        kl_to_ref_coeff: weight of the k3 KL to the reference log-probabilities
            (``("next", "ref_log_probs", "full")``); ``None`` or 0 disables it.
        kl_to_inference_coeff: weight of the k3 KL to the stored sampling log-probabilities.
        device: device of the clip buffers.
        masking_strategy: which tokens count: ``"sft"`` (response tokens, default), ``"rlhf"`` (assistant
            tokens) or ``"generic"`` (every attended token).
        ref_log_prob_padding_side, ref_log_prob_padding_value: how ragged reference log-probs are padded.

    Examples:
        >>> import torch
        >>> from torch import distributions as d, nn
        >>> class Actor(nn.Module):  # a stand-in with the wrapper's get_dist interface
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.logits = nn.Parameter(torch.zeros(2, 3, 5))
        ...     def get_dist(self, td, **kwargs):
        ...         return TokenDist(self.logits, torch.tensor([[False, True, True], [False, False, True]]))
        >>> class TokenDist(d.Categorical):
        ...     def __init__(self, logits, mask):
        ...         super().__init__(logits=logits)
        ...         self.mask = mask
        >>> from tensordict import TensorDict
        >>> td = TensorDict({("tokens", "full"): torch.randint(5, (2, 3)),
        ...     ("log_probs", "full"): torch.full((2, 3), -1.6), "advantage": torch.tensor([[[1.0]], [[-1.0]]])}, [2])
        >>> out = GRPOLoss(Actor())(td)
        >>> out.loss_objective.shape, bool(out.loss_objective.requires_grad)
        (torch.Size([]), True)
    """

    output_type: type[LLMLossOutput] = GRPOLossOutput

    @dataclasses.dataclass
    class _AcceptedKeys(LossModule._AcceptedKeys):
        """Keys of the GRPO losses."""

        advantage: NestedKey = "advantage"
        action: NestedKey = ("tokens", "full")
        sample_log_prob: NestedKey = ("log_probs", "full")
        ref_log_probs: NestedKey = ("next", "ref_log_probs", "full")

    def __init__(
        self,
        actor_network: nn.Module | None = None,
        *,
        clip_epsilon: float | tuple[float, float] = 0.2,
        kl_mask_threshold: float | None = None,
        aggregation: Literal["token_mean", "prompt_mean", "none"] | None = "token_mean",
        entropy_bonus: bool = True,
        samples_mc_entropy: int = 1,
        entropy_coeff: float = 0.01,
        gamma: float | None = None,
        reduction: Literal["mean", "sum", "none"] | None = None,
        clip_value: bool | float | None = None,
        kl_to_ref_coeff: float | None = None,
        kl_to_inference_coeff: float | None = None,
        device: torch.device | None = None,
        masking_strategy: Literal["sft", "rlhf", "generic"] = "sft",
        ref_log_prob_padding_side: Literal["left", "right"] = "left",
        ref_log_prob_padding_value: float = 0.0,
        **kwargs: Any,
    ) -> None:
        self._check_no_extra_kwargs(str(type(self).__name__), kwargs)
        if actor_network is None or not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"{type(self).__name__}: actor_network must be an LLM wrapper (or module) with get_dist(), "
                f"got {type(actor_network).__name__}"
            )
        if gamma is not None or clip_value not in (None, False):
            raise TypeError(f"{type(self).__name__} has no value function: gamma and clip_value must be None.")
        aggregation = aggregation or "token_mean"
        if aggregation not in _AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {_AGGREGATIONS}, got {aggregation!r}")
        if masking_strategy not in _MASKING:
            raise ValueError(f"masking_strategy must be one of {tuple(_MASKING)}, got {masking_strategy!r}")
        if reduction not in (None, "mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        if ref_log_prob_padding_side not in ("left", "right"):
            raise ValueError(f"ref_log_prob_padding_side must be 'left' or 'right', got {ref_log_prob_padding_side!r}")
        super().__init__()
        self.actor_network = actor_network
        self.entropy_bonus = entropy_bonus
        self.samples_mc_entropy = samples_mc_entropy
        self.entropy_coeff = entropy_coeff
        self.reduction = reduction or "mean"
        self.aggregation = aggregation
        self.kl_mask_threshold = kl_mask_threshold
        self.kl_to_ref_coeff = kl_to_ref_coeff
        self.kl_to_inference_coeff = kl_to_inference_coeff
        self.masking_strategy = masking_strategy
        self.ref_log_prob_padding_side = ref_log_prob_padding_side
        self.ref_log_prob_padding_value = ref_log_prob_padding_value
        low, high = _clip_pair(clip_epsilon)
        if device is None:
            device = self._default_device()
        self.register_buffer("clip_epsilon_low", torch.tensor(low, device=device))
        self.register_buffer("clip_epsilon_high", torch.tensor(high, device=device))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(masking_strategy={self.masking_strategy!r}, aggregation={self.aggregation!r})"

    # ------------------------------------------------------------------ keys
    def _collect_in_keys(self) -> list[NestedKey]:
        keys = list(getattr(self.actor_network, "in_keys", None) or [])
        k = self._tensor_keys
        return keys + [k.action, k.sample_log_prob, k.advantage, k.ref_log_probs]

    def _out_keys(self) -> list[str]:
        keys = ["loss_objective", "clip_fraction", "ESS", "kl_approx"]
        if self.entropy_bonus:
            keys += ["entropy", "loss_entropy"]
        return keys + ["loss_kl_to_ref", "kl_to_ref", "loss_kl_to_inference", "kl_to_inference"]

    def _clip_bounds(self) -> tuple[Tensor, Tensor]:
        """``(log(1 - eps_low), log(1 + eps_high))``: the bounds of the clipped log-weight."""
        return (-self.clip_epsilon_low).log1p(), self.clip_epsilon_high.log1p()

    # ----------------------------------------------------------------- parts
    def _dist(self, td: TensorDictBase) -> MaskedTokenDist:
        """The actor's masked token distribution for ``masking_strategy`` (``get_dist`` when the actor has no
        dedicated helper)."""
        actor: Any = self.actor_network  # an LLM wrapper: its get_dist helpers are not on nn.Module
        getter = getattr(actor, _MASKING[self.masking_strategy], None)
        if getter is not None:
            return getter(td)
        return actor.get_dist(td, logits_key="logits")

    def _current_log_prob(self, td: TensorDictBase) -> tuple[Tensor, MaskedTokenDist]:
        dist = self._dist(td)
        # -100 is the ignore index of the masked token distributions: padded positions score 0.
        action = padded_entry(td, self._tensor_keys.action, padding_side="left", padding_value=-100)
        if action is None:
            raise self._missing(self._tensor_keys.action, td)
        return dist.log_prob(action), dist

    def _stored_log_prob(self, td: TensorDictBase, cur: Tensor) -> Tensor:
        key = self._tensor_keys.sample_log_prob
        prev = padded_entry(td, key, padding_side="left", padding_value=0.0)
        if prev is None:
            raise self._missing(key, td)
        if prev.requires_grad:
            raise RuntimeError(f"the stored log-probability {key!r} requires grad; detach it before the loss")
        if prev.shape != cur.shape:
            raise ValueError(
                f"{type(self).__name__}: the stored log-probs {key!r} have shape {tuple(prev.shape)} but the "
                f"current ones {tuple(cur.shape)} (masking_strategy={self.masking_strategy!r}). Both must be "
                "aligned with the full token sequence: store ('log_probs', 'full') from the same tokens, and use "
                "'rlhf' for multi-turn histories, 'sft' for single-turn prompts, 'generic' for all tokens."
            )
        return prev

    def _aggregate(self, value: Tensor, mask: Tensor) -> Tensor:
        """Reduces a per-token term ``[*B, T, 1]`` over the masked tokens."""
        if self.aggregation == "none" or self.reduction == "none":
            return torch.where(mask.unsqueeze(-1), value, torch.zeros((), dtype=value.dtype, device=value.device))
        if self.reduction == "sum":
            return torch.where(mask.unsqueeze(-1), value, torch.zeros((), dtype=value.dtype, device=value.device)).sum()
        if self.aggregation == "prompt_mean":
            return masked_mean(value, mask, dim=(-2, -1)).mean()
        return masked_mean(value, mask)

    def _compute_policy_objective(self, log_weight: Tensor, advantage: Tensor) -> tuple[Tensor, Tensor]:
        """Per-token PPO-clip objective and the per-token clipped indicator."""
        clipped = log_weight.clamp(*self._clip_bounds())
        gain = torch.minimum(log_weight.exp() * advantage, clipped.exp() * advantage)
        return -gain, (clipped != log_weight)

    def _kl_term(self, key: NestedKey, cur: Tensor, mask: Tensor, td: TensorDictBase) -> Tensor:
        side, value = self.ref_log_prob_padding_side, self.ref_log_prob_padding_value
        if key == self._tensor_keys.sample_log_prob:
            side, value = "left", 0.0
        ref = padded_entry(td, key, padding_side=side, padding_value=value)
        if ref is None:
            raise self._missing(key, td)
        if ref.ndim == cur.ndim + 1 and ref.shape[-1] == 1:
            ref = ref.squeeze(-1)
        if ref.shape != cur.shape:
            raise ValueError(
                f"{type(self).__name__}: {key!r} has shape {tuple(ref.shape)} but the current log-probs "
                f"{tuple(cur.shape)}; store them aligned with ('tokens', 'full') (shape [B, T] or [B, T, 1])."
            )
        ref = torch.where(mask, ref, torch.zeros((), dtype=ref.dtype, device=ref.device))
        return self._aggregate(k3_kl_token_estimate(ref, cur).unsqueeze(-1), mask)

    # --------------------------------------------------------------- forward
    def forward(self, tensordict: TensorDictBase) -> LLMLossOutput:
        """Computes the loss terms (an :class:`LLMLossOutput` subclass)."""
        k = self._tensor_keys
        if k.action not in tensordict.keys(True, True):
            raise self._missing(k.action, tensordict)
        td = tensordict.copy()
        cur, dist = self._current_log_prob(td)
        prev = self._stored_log_prob(td, cur)
        # NaN marks positions the sampler could not score (e.g. earlier turns inside a prompt): not counted.
        mask = dist.mask & torch.isfinite(prev)
        zero = torch.zeros((), dtype=cur.dtype, device=cur.device)
        cur = torch.where(mask, cur, zero)
        prev = torch.where(mask, prev, zero)
        if self.kl_mask_threshold is not None and self.kl_mask_threshold > 0:
            mask = mask & (0.5 * (cur - prev).detach() ** 2 <= self.kl_mask_threshold)
        log_weight = (cur - prev).unsqueeze(-1)
        advantage = token_advantage(self, td, log_weight.ndim)
        out: dict[str, Tensor | None] = {}
        with torch.no_grad():
            lw = torch.where(mask, log_weight.squeeze(-1), torch.full((), float("-inf"), dtype=cur.dtype, device=cur.device))
            flat = lw.reshape(-1)
            out["ESS"] = (2 * flat.logsumexp(0) - (2 * flat).logsumexp(0)).exp() / mask.sum().clamp_min(1)
            out["kl_approx"] = masked_mean(prev - cur, mask)
        loss, clipped = self._compute_policy_objective(log_weight, advantage)
        out["loss_objective"] = self._aggregate(loss, mask)
        out["clip_fraction"] = masked_mean(clipped.squeeze(-1).to(cur.dtype), mask)
        if self.entropy_bonus:
            entropy = dist.entropy().unsqueeze(-1)
            out["entropy"] = masked_mean(entropy.detach(), mask)
            out["loss_entropy"] = self._aggregate(-self.entropy_coeff * entropy, mask)
        if self.kl_to_ref_coeff:
            kl = self._kl_term(k.ref_log_probs, cur, mask, td)
            out["loss_kl_to_ref"] = self.kl_to_ref_coeff * kl
            out["kl_to_ref"] = kl.detach()
        if self.kl_to_inference_coeff is not None:
            kl = self._kl_term(k.sample_log_prob, cur, mask, td)
            out["loss_kl_to_inference"] = self.kl_to_inference_coeff * kl
            out["kl_to_inference"] = kl.detach()
        return self.output_type(**out, batch_size=[])


class DAPO(GRPOLoss):
    """DAPO: GRPO with decoupled, asymmetric clipping (Yu et al., 2025, https://arxiv.org/abs/2503.14476).

    Same arguments as :class:`GRPOLoss`; the paper recommends ``clip_epsilon=(0.2, 0.28)`` ("clip-higher")
    with the default token-mean aggregation.

    Examples:
        >>> DAPO.output_type.__name__
        'DAPOLossOutput'
    """

    output_type = DAPOLossOutput


class CISPOLoss(GRPOLoss):
    """CISPO: clipped importance-sampling weights as detached coefficients of a REINFORCE term
    (MiniMax-M1, 2025, https://arxiv.org/abs/2506.13585).

    Per token: ``loss = -sg(clip(w, 1 - eps_low, 1 + eps_high)) * A * log pi(tok)``. Its value equals
    ``-clip(w) * A`` up to the constant ``log pi`` factor's value and, unlike PPO's clip, every token keeps a
    gradient: the clip only bounds the weight. The value reported is ``-clip(w) * A`` (as in TorchRL) and the
    gradient is the CISPO one, ``-clip(w) * A * grad log pi``.

    Examples:
        >>> CISPOLoss.output_type.__name__
        'CISPOLossOutput'
    """

    output_type = CISPOLossOutput

    def _compute_policy_objective(self, log_weight: Tensor, advantage: Tensor) -> tuple[Tensor, Tensor]:
        clipped = log_weight.clamp(*self._clip_bounds())
        weight = clipped.detach().exp()
        # value: -clip(w) * A; gradient: -clip(w) * A * d(log pi) (the log-weight's gradient is d log pi).
        surrogate = weight * (1 + log_weight - log_weight.detach())
        return -surrogate * advantage, (clipped != log_weight)
