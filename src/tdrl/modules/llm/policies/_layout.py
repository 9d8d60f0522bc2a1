"""Moving token data between the ragged form (one 1-D tensor per sample) and padded tensors + masks.

Every wrapper works on ragged lists internally; these helpers are the only place where padding is added or
removed, and they locate pads through masks, never through token ids.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import LazyStackedTensorDict, NestedKey, TensorDictBase
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


def _is_lazy(td: TensorDictBase, key: NestedKey) -> bool:
    # a lazy stack holds one entry per sample, even when all the samples happen to have one length
    obj: object = td
    for part in (key[:-1] if isinstance(key, tuple) else ()):
        if isinstance(getattr(obj, "_tensordict", obj), LazyStackedTensorDict):
            return True
        obj = obj.get(part)
    return isinstance(getattr(obj, "_tensordict", obj), LazyStackedTensorDict)


def _rows(td: TensorDictBase, key: NestedKey) -> list[torch.Tensor]:
    value = td.get(key, as_list=True) if _is_lazy(td, key) else td.get(key)
    if isinstance(value, torch.Tensor):
        if not value.is_nested and value.dim() != 2:
            raise ValueError(f"{key!r}: expected a [batch, length] tensor, got shape {tuple(value.shape)}")
        return list(value.unbind(0))
    return [torch.as_tensor(v).reshape(-1) for v in value]


def read_ragged(
    td: TensorDictBase, key: NestedKey, mask_keys: Sequence[NestedKey] = ()
) -> tuple[list[torch.Tensor], torch.Tensor | None]:
    """Reads ``td[key]`` as one 1-D tensor of real tokens per batch element.

    Each row is cut with the first mask found under ``mask_keys`` whose rows have the same shapes; without
    one, every position is a real token (ragged entries, or a dense batch of equal-length sequences).
    Returns the rows and, when the rows were padded to one length and cut with a mask, that ``[B, L]`` mask
    (callers write their outputs back in the same layout); ``None`` otherwise.

    Raises:
        KeyError: when ``key`` is missing, naming the key and the keys present.
    """
    if key not in td.keys(True):
        raise KeyError(f"Expected the input key {key!r} in the tensordict; found {sorted(map(str, td.keys(True)))}")
    rows = _rows(td, key)
    for mk in mask_keys:
        if mk not in td.keys(True):
            continue
        masks = _rows(td, mk)
        if len(masks) == len(rows) and all(m.shape == r.shape for m, r in zip(masks, rows)):
            cut = [r[m.bool()] for r, m in zip(rows, masks)]
            if len({r.shape for r in rows}) != 1:
                return cut, None
            stacked = torch.stack(masks).bool()
            # a lazy stack of unpadded rows stays ragged; padded rows (dense or stacked) keep their layout
            keep = not _is_lazy(td, key) or not bool(stacked.all())
            return cut, (stacked if keep else None)
    return rows, None
