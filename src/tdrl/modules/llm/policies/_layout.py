"""Moving token data between the ragged form (one 1-D tensor per sample) and padded tensors + masks.

Every wrapper works on ragged lists internally; these helpers are the only place where padding is added or
removed, and they locate pads through masks, never through token ids.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import NestedKey, TensorDictBase
from torch.nn.utils.rnn import pad_sequence

__all__ = ["pad", "unpad", "read_ragged", "scatter_like", "lengths_of"]


def pad(seqs: Sequence[torch.Tensor], value: float | int | bool, side: str) -> torch.Tensor:
    """Stacks 1-D (or ``[L, ...]``) tensors into ``[B, max_L, ...]``, padding on ``side``.

    Examples:
        >>> import torch
        >>> pad([torch.tensor([1, 2]), torch.tensor([3])], 0, "left")
        tensor([[1, 2],
                [0, 3]])
    """
    if side not in ("left", "right"):
        raise ValueError(f"padding side must be 'left' or 'right', got {side!r}")
    if not len(seqs):
        raise ValueError("pad() needs at least one sequence")
    return pad_sequence(list(seqs), batch_first=True, padding_value=value, padding_side=side)


def unpad(padded: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
    """Splits ``padded[B, L, ...]`` into the ``B`` tensors of the positions where ``mask[B, L]`` is true.

    Examples:
        >>> import torch
        >>> unpad(torch.tensor([[0, 5, 6], [7, 8, 0]]), torch.tensor([[0, 1, 1], [1, 1, 0]]).bool())
        [tensor([5, 6]), tensor([7, 8])]
    """
    if padded.shape[:2] != mask.shape:
        raise ValueError(f"unpad: values of shape {tuple(padded.shape)} do not match mask {tuple(mask.shape)}")
    mask = mask.bool()
    return [row[m] for row, m in zip(padded.unbind(0), mask.unbind(0), strict=True)]


def lengths_of(seqs: Sequence[torch.Tensor]) -> list[int]:
    """Lengths (first dimension) of each ``[L, ...]`` sequence."""
    return [int(s.shape[0]) if s.dim() else 1 for s in seqs]


def scatter_like(values: Sequence[torch.Tensor], mask: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
    """Writes ragged ``values`` into the true positions of ``mask[B, L]`` (row by row), ``fill`` elsewhere.

    The inverse of :func:`unpad`: it keeps whatever layout (left, right or both-sided padding) the mask has.

    Examples:
        >>> import torch
        >>> scatter_like([torch.tensor([1.0]), torch.tensor([2.0, 3.0])], torch.tensor([[0, 1], [1, 1]]).bool())
        tensor([[0., 1.],
                [2., 3.]])
    """
    mask = mask.bool()
    counts = mask.sum(-1).tolist()
    got = lengths_of(values)
    if counts != got:
        raise ValueError(f"scatter_like: mask holds {counts} real positions per row but the values have {got}")
    trailing = values[0].shape[1:] if len(values) else ()
    ref = values[0] if len(values) else torch.zeros(())
    out = torch.full((*mask.shape, *trailing), fill, dtype=ref.dtype, device=ref.device)
    out[mask] = torch.cat(list(values), 0) if len(values) else out[mask]
    return out


def read_ragged(
    td: TensorDictBase, key: NestedKey, mask_keys: Sequence[NestedKey] = ()
) -> tuple[list[torch.Tensor], torch.Tensor | None]:
    """Reads ``td[key]`` as one 1-D tensor per batch element.

    A ragged entry (lazy stack, nested tensor, list) is returned as is. A dense ``[B, L]`` tensor is cut with
    the first mask found under ``mask_keys``; without a mask every position is a real token (a dense tensor is
    then a batch of equal-length sequences). Returns the list and the mask used (``None`` when ragged).

    Raises:
        KeyError: when ``key`` is missing, naming the key and the keys present.
    """
    if key not in td.keys(True):
        raise KeyError(f"Expected the input key {key!r} in the tensordict; found {sorted(map(str, td.keys(True)))}")
    try:
        value = td.get(key)
    except RuntimeError:  # a lazy stack of different lengths: read it element by element
        value = td.get(key, as_list=True)
    if isinstance(value, torch.Tensor) and not value.is_nested:
        if value.dim() != 2:
            raise ValueError(f"{key!r}: expected a [batch, length] tensor, got shape {tuple(value.shape)}")
        for mk in mask_keys:
            mask = td.get(mk, None)
            if isinstance(mask, torch.Tensor) and not mask.is_nested and mask.shape == value.shape:
                return unpad(value, mask), mask.bool()
        return list(value.unbind(0)), None
    if isinstance(value, torch.Tensor):
        return list(value.unbind(0)), None
    return [torch.as_tensor(v).reshape(-1) for v in value], None
