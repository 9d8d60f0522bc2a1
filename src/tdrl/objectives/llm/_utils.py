"""Helpers of the LLM losses: the k3 KL token estimate, and the token-entry readers of ``_tokens``."""

from __future__ import annotations

from torch import Tensor

from tdrl.objectives._tokens import masked_mean, padded_entry

__all__ = ["k3_kl_token_estimate", "masked_mean", "padded_entry"]


def k3_kl_token_estimate(target_log_prob: Tensor, log_prob: Tensor) -> Tensor:
    """Per-token k3 estimate of ``KL(pi || pi_target)``: ``exp(d) - 1 - d`` with ``d = target_log_prob - log_prob``.

    Non-negative; unbiased when the scored tokens were sampled from ``pi`` (the distribution behind
    ``log_prob``). See Schulman, "Approximating KL divergence" (2020), http://joschu.net/blog/kl-approx.html.

    Args:
        target_log_prob: per-token log-probabilities of the target (reference) distribution.
        log_prob: per-token log-probabilities of the sampling distribution, on the same tokens.

    Examples:
        >>> import torch
        >>> k3_kl_token_estimate(torch.tensor([-1.0, -2.0]), torch.tensor([-1.0, -1.0]))
        tensor([0.0000, 0.3679])
    """
    diff = target_log_prob - log_prob
    return diff.expm1() - diff
