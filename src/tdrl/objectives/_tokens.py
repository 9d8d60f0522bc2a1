"""Reading token entries of LLM batches: ragged entries as padded tensors, masked means (shared by the
LLM losses and the PPO losses' token-data path)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

import torch
from tensordict import LazyStackedTensorDict, TensorDictBase
from tensordict.utils import NestedKey
from torch import Tensor

__all__ = ["masked_mean", "padded_entry", "token_advantage"]


class MaskedTokenDist(Protocol):
    """What the token losses read of an LLM wrapper's masked distribution (``LLMMaskedCategorical``)."""

    @property
    def mask(self) -> Tensor: ...

    def log_prob(self, value: Tensor) -> Tensor: ...

    def entropy(self) -> Tensor: ...


def padded_entry(
    td: TensorDictBase,
    key: NestedKey,
    *,
    padding_side: Literal["left", "right"] = "left",
    padding_value: float = 0.0,
) -> Tensor | None:
    """The entry ``key`` of ``td`` as one padded tensor, or ``None`` when it is missing.

    Token entries are dense tensors (``pad_output=True``), nested tensors, or ragged entries of a lazy
    stack (``pad_output=False``); the last two are padded on ``padding_side`` with ``padding_value``.
    A dense tensor is returned as it is (no copy), which keeps the padded path free of overhead.

    Examples:
        >>> from tensordict import TensorDict, lazy_stack
        >>> a = TensorDict(x=torch.tensor([1.0, 2.0]))
        >>> b = TensorDict(x=torch.tensor([3.0, 4.0, 5.0]))
        >>> padded_entry(lazy_stack([a, b]), "x")
        tensor([[0., 1., 2.],
                [3., 4., 5.]])
    """
    if isinstance(td, LazyStackedTensorDict):
        # LazyStackedTensorDict.get takes these keywords; tensordict types get() as the TensorDictBase one.
        return td.get(  # type: ignore[call-overload]
            key, None, as_padded_tensor=True, padding_side=padding_side, padding_value=padding_value
        )
    value = td.get(key, None)
    if value is None or not isinstance(value, Tensor) or not value.is_nested:
        return value
    return torch.nn.utils.rnn.pad_sequence(
        list(value.unbind(0)), batch_first=True, padding_value=padding_value, padding_side=padding_side
    )


def masked_mean(value: Tensor, mask: Tensor, dim: int | tuple[int, ...] | None = None) -> Tensor:
    """Mean of ``value`` over the positions where ``mask`` (broadcast to the right) is ``True``.

    An empty mask gives 0 rather than NaN.

    Examples:
        >>> masked_mean(torch.tensor([1.0, 2.0, 9.0]), torch.tensor([True, True, False]))
        tensor(1.5000)
    """
    mask = mask.reshape(mask.shape + (1,) * (value.ndim - mask.ndim))
    total = torch.where(mask, value, torch.zeros((), dtype=value.dtype, device=value.device))
    count = mask.expand_as(value).to(value.dtype)
    if dim is None:
        return total.sum() / count.sum().clamp_min(1.0)
    return total.sum(dim) / count.sum(dim).clamp_min(1.0)


def token_advantage(loss: Any, td: TensorDictBase, ndim: int) -> Tensor:  # noqa: ANN401
    """The advantage of ``loss`` (its ``advantage`` key) shaped like a log-weight of ``ndim`` dims: ``[B, 1]``
    (one per sequence) or ``[B, T]`` (one per token) get the trailing feature dim; a missing entry or another
    shape is an error naming the key and the accepted shapes."""
    key = loss._tensor_keys.advantage
    advantage = padded_entry(td, key, padding_side="left", padding_value=0.0)
    if advantage is None:
        raise loss._missing(key, td)
    if advantage.ndim == ndim - 1:
        advantage = advantage.unsqueeze(-1)
    if advantage.ndim != ndim:
        raise ValueError(
            f"{type(loss).__name__}: advantage {key!r} has shape {tuple(advantage.shape)}; token data needs one "
            "advantage per sequence ([*B, 1, 1] or [*B, 1]) or per token ([*B, T, 1] or [*B, T])."
        )
    return advantage
