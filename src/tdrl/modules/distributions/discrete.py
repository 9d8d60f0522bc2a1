"""Discrete action distributions: one-hot and masked categoricals."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

import torch
import torch.nn.functional as F
from torch import distributions as D

__all__ = ["ReparamGradientStrategy", "OneHotCategorical", "MaskedCategorical", "MaskedOneHotCategorical"]


class ReparamGradientStrategy(Enum):
    """How :meth:`OneHotCategorical.rsample` builds gradients for a discrete sample.

    ``PassThrough``: ``sample + probs - probs.detach()`` (straight-through). ``RelaxedOneHot``: a
    Gumbel-softmax (temperature 1) sample whose values are replaced by the hard one-hot.

    Examples:
        >>> import torch
        >>> dist = OneHotCategorical(logits=torch.zeros(3), grad_method=ReparamGradientStrategy.RelaxedOneHot)
        >>> dist.rsample().sum().item()
        1.0
    """

    PassThrough = 1
    RelaxedOneHot = 2


def _squeeze_trailing_singleton(params: torch.Tensor | None) -> torch.Tensor | None:
    # A trailing dimension of size 1 is read as "no category dimension", as TorchRL does.
    if params is not None and params.shape[-1] == 1:
        return params[..., 0]
    return params


def _argmax_one_hot(scores: torch.Tensor) -> torch.Tensor:
    return (scores == scores.max(-1, keepdim=True)[0]).to(torch.long)


def _rsample_one_hot(
    dist: D.Categorical, sample_shape: Sequence[int], grad_method: ReparamGradientStrategy, logits: torch.Tensor
) -> torch.Tensor:
    if grad_method == ReparamGradientStrategy.RelaxedOneHot:
        out = D.RelaxedOneHotCategorical(torch.ones((), device=logits.device), logits=logits).rsample(sample_shape)
        hard = (out == out.max(-1, keepdim=True)[0]).to(out.dtype)
        return out + (hard - out).detach()
    if grad_method == ReparamGradientStrategy.PassThrough:
        probs = logits.softmax(-1)
        return dist.sample(sample_shape) + probs - probs.detach()
    raise ValueError(f"Unknown grad_method {grad_method!r}; expected a ReparamGradientStrategy member.")


class OneHotCategorical(D.Categorical):
    """A categorical distribution that reads and writes one-hot tensors.

    Args:
        logits: unnormalised log-probabilities ``[..., n]``.
        probs: probabilities ``[..., n]`` (exclusive with ``logits``).
        grad_method: how :meth:`rsample` propagates gradients (see :class:`ReparamGradientStrategy`).
        **kwargs: forwarded to ``torch.distributions.Categorical``.

    Examples:
        >>> import torch
        >>> dist = OneHotCategorical(logits=torch.tensor([0.0, 10.0, 0.0]))
        >>> dist.mode
        tensor([0, 1, 0])
        >>> dist.log_prob(torch.tensor([0, 1, 0])).exp() > 0.99
        tensor(True)
    """

    num_params: int = 1

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        grad_method: ReparamGradientStrategy = ReparamGradientStrategy.PassThrough,
        **kwargs,
    ) -> None:
        logits = _squeeze_trailing_singleton(logits)
        probs = _squeeze_trailing_singleton(probs)
        self.grad_method = grad_method
        kwargs.setdefault("validate_args", False)
        super().__init__(probs=probs, logits=logits, **kwargs)
        self.num_samples = self._num_events

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        return super().log_prob(value.argmax(dim=-1))

    @property
    def mode(self) -> torch.Tensor:
        return _argmax_one_hot(self.logits)

    @property
    def deterministic_sample(self) -> torch.Tensor:
        return self.mode

    def entropy(self) -> torch.Tensor:
        logits = self.logits.clamp(min=torch.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def sample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        return F.one_hot(super().sample(torch.Size(sample_shape)), self.num_samples)

    def rsample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        return _rsample_one_hot(self, torch.Size(sample_shape), self.grad_method, self.logits)


class MaskedCategorical(D.Categorical):
    """A categorical distribution restricted to the actions a mask allows; masked actions are never sampled.

    Args:
        logits: unnormalised log-probabilities ``[..., n]``.
        probs: probabilities (exclusive with ``logits``); masked entries are zeroed and the rest renormalised.

    Keyword Args:
        mask: boolean tensor broadcastable to ``logits``, ``False`` for forbidden actions. Exclusive with
            ``indices``.
        indices: integer tensor ``[..., k]`` listing the allowed actions (a sparse mask); ``logits`` keeps all
            ``n`` entries and only the listed ones are used.
        neg_inf: log-probability given to forbidden actions. Defaults to ``-inf``.
        padding_value: value of padded entries in ``indices`` (ignored for dense masks).
        use_cross_entropy: compute ``log_prob`` with ``F.cross_entropy`` (faster). Defaults to ``True``.
        padding_side: side of the padding in ``indices``. Defaults to ``"left"``.

    Examples:
        >>> import torch
        >>> dist = MaskedCategorical(logits=torch.zeros(4), mask=torch.tensor([True, False, True, True]))
        >>> bool((dist.sample((100,)) != 1).all())
        True
        >>> dist.log_prob(torch.tensor(1))
        tensor(-inf)
    """

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        *,
        mask: torch.Tensor | None = None,
        indices: torch.Tensor | None = None,
        neg_inf: float = float("-inf"),
        padding_value: int | None = None,
        use_cross_entropy: bool = True,
        padding_side: str = "left",
    ) -> None:
        if (mask is None) == (indices is None):
            raise ValueError(f"{type(self).__name__} needs exactly one of `mask` or `indices`.")
        if (logits is None) == (probs is None):
            raise ValueError(f"{type(self).__name__} needs exactly one of `logits` or `probs`.")
        sparse = mask is None
        mask = indices if sparse else mask
        if not sparse and mask.dtype != torch.bool:
            raise ValueError(f"{type(self).__name__}: `mask` must be a bool tensor, got dtype {mask.dtype}.")
        if probs is not None:
            logits = probs.log()
        num_samples = logits.shape[-1]
        if not sparse:
            logits = logits.masked_fill(~mask, neg_inf)
        else:
            logits = logits.gather(-1, mask)
            if padding_value is not None:
                padding = mask == padding_value
                logits = logits.masked_fill(padding, neg_inf)
                mask = mask.masked_fill(padding, 0)
        self.neg_inf = neg_inf
        self.use_cross_entropy = use_cross_entropy
        self._mask = mask
        self._sparse_mask = sparse
        self._padding_value = padding_value
        self._padding_side = padding_side
        super().__init__(logits=logits, validate_args=False)
        self.num_samples = num_samples

    @property
    def mask(self) -> torch.Tensor:
        if self._sparse_mask:
            raise ValueError(f"{type(self).__name__}.mask is undefined for a sparse mask (built from `indices`).")
        return self._mask

    @property
    def padding_value(self) -> int:
        return 0 if self._padding_value is None else self._padding_value

    @property
    def padding_side(self) -> str:
        return self._padding_side

    def entropy(self) -> torch.Tensor:
        # Forbidden actions carry zero probability and contribute nothing.
        logits = self.logits
        logits = logits.masked_fill(~logits.isfinite(), torch.finfo(logits.dtype).min)
        logits = logits - logits.logsumexp(-1, keepdim=True)
        return -(logits * logits.exp()).sum(-1)

    def sample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        out = super().sample(torch.Size(sample_shape))
        if self._sparse_mask:
            out = self._mask.expand(*out.shape, self._mask.shape[-1]).gather(-1, out.unsqueeze(-1)).squeeze(-1)
        return out

    def _dense_index(self, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        if not self._sparse_mask:
            return value, None
        hits = self._mask == value.unsqueeze(-1)
        return hits.int().argmax(-1), hits.any(-1)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        index, valid = self._dense_index(value)
        logits = self.logits
        if self.use_cross_entropy:
            shape = torch.broadcast_shapes(index.shape, logits.shape[:-1])
            flat_logits = logits.expand(*shape, logits.shape[-1]).reshape(-1, logits.shape[-1])
            lp = -F.cross_entropy(flat_logits, index.expand(shape).reshape(-1), reduction="none").view(shape)
        else:
            lp = super().log_prob(index)
        lp = torch.where(lp.isfinite(), lp, torch.full_like(lp, self.neg_inf))
        if valid is not None:
            lp = lp.masked_fill(~valid, self.neg_inf)
        return lp

    @property
    def mode(self) -> torch.Tensor:
        mode = super().mode
        if self._sparse_mask:
            mode = self._mask.gather(-1, mode.unsqueeze(-1)).squeeze(-1)
        return mode

    @property
    def deterministic_sample(self) -> torch.Tensor:
        return self.mode


class MaskedOneHotCategorical(MaskedCategorical):
    """The one-hot version of :class:`MaskedCategorical`: samples, modes and ``log_prob`` inputs are one-hot.

    Args:
        logits: unnormalised log-probabilities.
        probs: probabilities (exclusive with ``logits``).
        mask: boolean mask, ``False`` for forbidden actions (exclusive with ``indices``).
        indices: allowed action indices (a sparse mask).
        neg_inf: log-probability of forbidden actions. Defaults to ``-inf``.
        padding_value: padding value in ``indices``.
        grad_method: gradient strategy of :meth:`rsample`.

    Examples:
        >>> import torch
        >>> dist = MaskedOneHotCategorical(logits=torch.zeros(3), mask=torch.tensor([False, True, True]))
        >>> bool((dist.sample((50,))[:, 0] == 0).all())
        True
    """

    def __init__(
        self,
        logits: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        indices: torch.Tensor | None = None,
        neg_inf: float = float("-inf"),
        padding_value: int | None = None,
        grad_method: ReparamGradientStrategy = ReparamGradientStrategy.PassThrough,
    ) -> None:
        self.grad_method = grad_method
        super().__init__(logits=logits, probs=probs, mask=mask, indices=indices, neg_inf=neg_inf,
                         padding_value=padding_value)

    def sample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        return F.one_hot(super().sample(sample_shape), self.num_samples)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        return super().log_prob(value.argmax(dim=-1))

    @property
    def mode(self) -> torch.Tensor:
        if self._sparse_mask:
            return F.one_hot(super().mode, self.num_samples)
        return _argmax_one_hot(self.logits)

    def _full_logits(self) -> torch.Tensor:
        if not self._sparse_mask:
            return self.logits
        full = self.logits.new_full((*self.logits.shape[:-1], self.num_samples), self.neg_inf)
        return full.scatter(-1, self._mask, self.logits)

    def rsample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        return _rsample_one_hot(self, torch.Size(sample_shape), self.grad_method, self._full_logits())
