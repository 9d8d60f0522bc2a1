"""``LLMMaskedCategorical``: a categorical over a vocabulary at every position of a token sequence."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import distributions as D

__all__ = ["LLMMaskedCategorical"]


class LLMMaskedCategorical(D.Distribution):
    """Per-position categorical over a vocabulary, with a position-level or token-level mask.

    ``log_prob(tokens)`` is a cross-entropy with ``ignore_index``: masked positions (``mask[..., t]`` false,
    position-level) and tokens equal to ``ignore_index`` score exactly ``0.0`` and never index the vocabulary.
    A token-level mask (shape of ``logits``) forbids tokens: their log-prob is ``-inf``. Sampling, ``mode``
    and ``entropy`` use the masked logits.

    Args:
        logits: unnormalised scores ``[*B, T, V]``.
        mask: ``[*B, T]`` (positions) or ``[*B, T, V]`` (tokens), true where allowed.
        ignore_index: the token value that marks an ignored position in ``log_prob``. Defaults to ``-100``.

    Examples:
        >>> import torch
        >>> logits = torch.zeros(1, 3, 4)
        >>> dist = LLMMaskedCategorical(logits, mask=torch.tensor([[False, True, True]]))
        >>> dist.log_prob(torch.tensor([[-100, 1, 2]]))
        tensor([[ 0.0000, -1.3863, -1.3863]])
    """

    arg_constraints: dict = {}

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor, ignore_index: int = -100) -> None:
        if mask.shape not in (logits.shape[:-1], logits.shape):
            raise ValueError(
                f"LLMMaskedCategorical: mask shape {tuple(mask.shape)} must be the logits' batch shape "
                f"{tuple(logits.shape[:-1])} (positions) or the logits' shape {tuple(logits.shape)} (tokens)"
            )
        self._original_logits = logits
        self._mask = mask.bool()
        self.ignore_index = ignore_index
        self._position_level_masking = mask.shape == logits.shape[:-1]
        self._masked_logits: torch.Tensor | None = None
        self._masked_dist: D.Categorical | None = None
        super().__init__(batch_shape=logits.shape[:-1], event_shape=torch.Size(), validate_args=False)

    @property
    def position_level_masking(self) -> bool:
        """Whether the mask selects positions (``True``) or tokens (``False``)."""
        return self._position_level_masking

    @property
    def mask(self) -> torch.Tensor:
        """The boolean mask."""
        return self._mask

    @property
    def logits(self) -> torch.Tensor:
        """The unmasked logits."""
        return self._original_logits

    @property
    def probs(self) -> torch.Tensor:
        """Softmax of the unmasked logits."""
        return self._original_logits.softmax(-1)

    @property
    def masked_logits(self) -> torch.Tensor:
        """Logits with disallowed entries set to the dtype's minimum (computed once)."""
        if self._masked_logits is None:
            mask = self._mask.unsqueeze(-1) if self._position_level_masking else self._mask
            low = torch.finfo(self._original_logits.dtype).min
            self._masked_logits = self._original_logits.masked_fill(~mask, low)
        return self._masked_logits

    @property
    def masked_dist(self) -> D.Categorical:
        """The ``Categorical`` over the masked logits (used for sampling and entropy)."""
        if self._masked_dist is None:
            self._masked_dist = D.Categorical(logits=self.masked_logits, validate_args=False)
        return self._masked_dist

    def clear_cache(self) -> None:
        """Drops the cached masked logits and distribution."""
        self._masked_logits = None
        self._masked_dist = None

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """Log-probability of each token; ``0.0`` at masked positions and at ``ignore_index`` tokens."""
        if value.shape != self.batch_shape:
            raise ValueError(f"log_prob: tokens of shape {tuple(value.shape)}, expected {tuple(self.batch_shape)}")
        if self._position_level_masking:
            logits = self._original_logits
            value = value.masked_fill(~self._mask, self.ignore_index)
        else:
            logits = self.masked_logits.masked_fill(~self._mask, float("-inf"))
        flat = -F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), value.reshape(-1), reduction="none", ignore_index=self.ignore_index
        )
        # + 0.0 turns the -0.0 of negated ignored entries into +0.0
        return (flat + 0.0).reshape(value.shape)

    def sample(self, sample_shape: torch.Size | Sequence[int] = torch.Size()) -> torch.Tensor:
        """Samples allowed tokens at every position."""
        return self.masked_dist.sample(torch.Size(sample_shape))

    def rsample(self, sample_shape: torch.Size | Sequence[int] = torch.Size()) -> torch.Tensor:
        """Same as :meth:`sample` (discrete samples carry no reparameterised gradient)."""
        return self.sample(sample_shape)

    @property
    def mode(self) -> torch.Tensor:
        """The most likely allowed token at every position."""
        return self.masked_logits.argmax(-1)

    def entropy(self) -> torch.Tensor:
        """Entropy of the masked categorical at every position."""
        return self.masked_dist.entropy()
