"""Ordinal distributions over ordered finite sets (Tang & Agrawal, 2020, https://arxiv.org/abs/1901.10500)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import distributions as D

from tdrl.modules.distributions.discrete import OneHotCategorical

__all__ = ["Ordinal", "OneHotOrdinal", "ordinal_logits"]


def ordinal_logits(scores: torch.Tensor) -> torch.Tensor:
    """Eq. 4 of Tang & Agrawal: ``logit_k = sum_{j<=k} log sigma(s_j) + sum_{j>k} log sigma(-s_j)``.

    Neighbouring classes share most terms, which encodes the order of the support.

    Args:
        scores: ``[..., N]`` network outputs.

    Returns:
        ``[..., N]`` unnormalised logits.

    Examples:
        >>> import torch
        >>> ordinal_logits(torch.zeros(3)).softmax(-1)
        tensor([0.3333, 0.3333, 0.3333])
    """
    up = F.logsigmoid(scores).cumsum(-1)
    down = F.logsigmoid(-scores)
    # sum over j > k: reverse cumulative sum, excluding position k itself
    above = down.flip(-1).cumsum(-1).flip(-1) - down
    return up + above


class Ordinal(D.Categorical):
    """A categorical distribution over ``{0, ..., N-1}`` whose logits come from :func:`ordinal_logits`.

    Args:
        scores: ``[..., N]`` network outputs.

    Examples:
        >>> import torch
        >>> dist = Ordinal(torch.tensor([5.0, 5.0, -5.0, -5.0]))
        >>> dist.mode
        tensor(1)
    """

    def __init__(self, scores: torch.Tensor) -> None:
        super().__init__(logits=ordinal_logits(scores), validate_args=False)


class OneHotOrdinal(OneHotCategorical):
    """The one-hot version of :class:`Ordinal`.

    Args:
        scores: ``[..., N]`` network outputs.

    Examples:
        >>> import torch
        >>> OneHotOrdinal(torch.tensor([5.0, 5.0, -5.0, -5.0])).mode
        tensor([0, 1, 0, 0])
    """

    def __init__(self, scores: torch.Tensor) -> None:
        super().__init__(logits=ordinal_logits(scores))
