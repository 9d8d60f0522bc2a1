"""DreamerV3's categorical scalars: a symexp-spaced support, two-hot targets and their decoding.

Hafner et al., "Mastering Diverse Domains through World Models" (2023), https://arxiv.org/abs/2301.04104, §B.
"""

from __future__ import annotations

import torch
from torch import nn

from tdrl.modules.functional import symexp

__all__ = ["SymExpTwoHot", "default_bins", "two_hot_cross_entropy", "two_hot_decode", "two_hot_encode",
           "unimix_probs"]

DEFAULT_NUM_BINS = 255
_BIN_RANGE = 20.0


def default_bins(num_bins: int = DEFAULT_NUM_BINS, *, device: torch.device | str | None = None,
                 dtype: torch.dtype | None = None) -> torch.Tensor:
    """``symexp`` of an even grid on ``[-20, 20]``, built so the support is exactly antisymmetric."""
    if num_bins < 2:
        raise ValueError(f"num_bins must be at least 2, got {num_bins}")
    dtype = dtype or torch.get_default_dtype()
    half = num_bins // 2
    if num_bins % 2:
        # Odd: the negative half up to 0 (included), mirrored without the centre.
        neg = symexp(torch.linspace(-_BIN_RANGE, 0, half + 1, device=device, dtype=dtype))
        return torch.cat((neg, -neg[:-1].flip(0)))
    step = 2 * _BIN_RANGE / (num_bins - 1)
    neg = symexp(-_BIN_RANGE + step * torch.arange(half, device=device, dtype=dtype))
    return torch.cat((neg, -neg.flip(0)))


def unimix_probs(logits: torch.Tensor, unimix: float) -> torch.Tensor:
    """Softmax probabilities mixed with a fraction ``unimix`` of the uniform distribution."""
    if not 0 <= unimix < 1:
        raise ValueError(f"unimix must be in [0, 1), got {unimix}")
    probs = torch.softmax(logits, dim=-1)
    return (1 - unimix) * probs + unimix / logits.shape[-1] if unimix else probs


def _check_bins(bins: torch.Tensor) -> None:
    if bins.ndim != 1 or bins.numel() < 2:
        raise ValueError(f"bins must be a 1-D ascending tensor of at least 2 values, got shape {tuple(bins.shape)}")


def two_hot_encode(x: torch.Tensor, bins: torch.Tensor) -> torch.Tensor:
    """Two-hot encoding of raw values on an ascending support (linear interpolation; saturates at the ends).

    Args:
        x: raw scalar values.
        bins: 1-D ascending support.

    Returns:
        ``[*x.shape, len(bins)]`` weights, in ``x``'s dtype and device.

    Examples:
        >>> two_hot_encode(torch.tensor([0.25]), torch.tensor([-1.0, 0.0, 1.0]))
        tensor([[0.0000, 0.7500, 0.2500]])
    """
    _check_bins(bins)
    bins = bins.to(device=x.device, dtype=x.dtype)
    x = x.clamp(bins[0], bins[-1])
    low = ((x.unsqueeze(-1) >= bins).sum(-1) - 1).clamp(0, bins.numel() - 2)
    high = low + 1
    w_high = (x - bins[low]) / (bins[high] - bins[low])
    out = torch.zeros((*x.shape, bins.numel()), device=x.device, dtype=x.dtype)
    out.scatter_(-1, low.unsqueeze(-1), (1 - w_high).unsqueeze(-1))
    out.scatter_(-1, high.unsqueeze(-1), w_high.unsqueeze(-1))
    return out


def two_hot_decode(logits: torch.Tensor, bins: torch.Tensor) -> torch.Tensor:
    """Expected raw value of the softmax of ``logits`` over ``bins`` (trailing dim removed).

    Mirrored bins are paired before summing, so uniform logits on an antisymmetric support decode to exactly
    zero whatever the reduction order.

    Examples:
        >>> bins = torch.tensor([-1.0, 0.0, 1.0])
        >>> two_hot_decode((two_hot_encode(torch.tensor([0.25]), bins) + 1e-8).log(), bins)
        tensor([0.2500])
    """
    if bins.ndim != 1 or logits.shape[-1] != bins.numel():
        raise ValueError(
            f"the last dim of logits ({logits.shape[-1]}) must equal the size of the 1-D support ({bins.numel()})"
        )
    bins = bins.to(device=logits.device, dtype=logits.dtype)
    probs = torch.softmax(logits, dim=-1)
    size = logits.shape[-1]
    mid = size // 2
    low_p, low_b = probs[..., :mid].flip(-1), bins[:mid].flip(-1)
    start = mid + size % 2
    up_p, up_b = probs[..., start:], bins[start:]
    out = ((up_p - low_p) * up_b + low_p * (up_b + low_b)).sum(-1)
    if size % 2:
        out = out + probs[..., mid] * bins[mid]
    return out


def two_hot_cross_entropy(logits: torch.Tensor, target: torch.Tensor, bins: torch.Tensor) -> torch.Tensor:
    """Cross entropy between ``logits`` and the two-hot encoding of raw ``target`` values (unreduced).

    Args:
        logits: ``[*batch, len(bins)]``.
        target: ``[*batch]`` or ``[*batch, 1]``.
        bins: 1-D ascending support.

    Examples:
        >>> two_hot_cross_entropy(torch.zeros(2, 3), torch.tensor([-0.5, 0.5]), torch.tensor([-1.0, 0.0, 1.0]))
        tensor([1.0986, 1.0986])
    """
    if target.shape == (*logits.shape[:-1], 1):
        target = target.squeeze(-1)
    if target.shape != logits.shape[:-1]:
        raise ValueError(f"target shape must be {tuple(logits.shape[:-1])} or {(*logits.shape[:-1], 1)}, got "
                         f"{tuple(target.shape)}")
    return -(two_hot_encode(target, bins) * torch.log_softmax(logits, dim=-1)).sum(-1)


class SymExpTwoHot(nn.Module):
    """DreamerV3's categorical scalar: ``num_bins`` raw values ``symexp(linspace(-20, 20))`` (buffer ``bins``).

    Args:
        num_bins: support size (default 255).

    Examples:
        >>> two_hot = SymExpTwoHot(num_bins=5)
        >>> target = torch.tensor([-10.0, 0.0, 10.0])
        >>> torch.allclose(two_hot.decode(two_hot.encode(target).log()), target, atol=1e-3)
        True
    """

    def __init__(self, num_bins: int = DEFAULT_NUM_BINS) -> None:
        super().__init__()
        self.num_bins = num_bins
        self.register_buffer("bins", default_bins(num_bins))

    def encode(self, target: torch.Tensor) -> torch.Tensor:
        """Two-hot targets of raw values."""
        return two_hot_encode(target, self.bins)

    def decode(self, logits: torch.Tensor) -> torch.Tensor:
        """Raw values of categorical logits."""
        return two_hot_decode(logits, self.bins)

    def loss(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Two-hot cross entropy against raw targets."""
        return two_hot_cross_entropy(logits, target, self.bins)

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        """Decoded values with a trailing singleton dim (``[*batch, 1]``)."""
        return self.decode(logits).unsqueeze(-1)
