"""Teacher-forced scoring of token sequences with a causal LM, padded or packed.

The log-prob contract: for a sequence ``x``, ``lp[0] = 0`` and ``lp[i] = log p(x[i] | x[:i])`` computed with
``log_softmax`` of the model's raw logits at position ``i - 1``. Logits returned for ``get_dist`` use the same
alignment (``aligned[i] = raw[i - 1]``, ``aligned[0] = 0``).

Two ways to run the model, which agree to float rounding:

* **padded** (``pad_model_input=True``): sequences left-padded into ``[B, L]`` with a 2-D attention mask and
  explicit ``position_ids`` counted over real tokens (GPT-2 does not derive them from the mask);
* **packed** (``pad_model_input=False``): sequences are bin-packed into rows no longer than the longest
  sequence; each row carries a 4-D block-causal boolean mask and position ids that restart at 0 for each
  sequence, so no token attends across sequences. Rows never exceed the padded width, so packing does at most
  the padded work, and less on ragged batches.

The model is always called with keyword arguments (GPT-2's second positional argument is the cache) and
``use_cache=False``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["aligned_log_probs", "pack_bins", "score_sequences"]


def aligned_log_probs(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """``lp[..., i] = log_softmax(logits[..., i - 1])[ids[..., i]]`` and ``lp[..., 0] = 0``.

    Args:
        logits: raw logits ``[..., L, V]``, where position ``t`` predicts token ``t + 1``.
        ids: the scored tokens ``[..., L]``.

    Examples:
        >>> import torch
        >>> lp = aligned_log_probs(torch.zeros(3, 4), torch.tensor([2, 1, 0]))
        >>> lp
        tensor([ 0.0000, -1.3863, -1.3863])
    """
    if logits.shape[:-1] != ids.shape:
        raise ValueError(f"logits {tuple(logits.shape)} do not match token ids {tuple(ids.shape)}")
    lp = torch.log_softmax(logits[..., :-1, :].float(), dim=-1).gather(-1, ids[..., 1:].unsqueeze(-1)).squeeze(-1)
    first = torch.zeros((*ids.shape[:-1], 1), dtype=lp.dtype, device=lp.device)
    return torch.cat([first, lp], dim=-1)


def _align_logits(logits: torch.Tensor) -> torch.Tensor:
    first = torch.zeros((*logits.shape[:-2], 1, logits.shape[-1]), dtype=logits.dtype, device=logits.device)
    return torch.cat([first, logits[..., :-1, :]], dim=-2)


def pack_bins(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """First-fit-decreasing bin packing of sequence indices into rows of at most ``capacity`` tokens.

    Examples:
        >>> pack_bins([5, 2, 3, 4], capacity=5)
        [[0], [3], [2, 1]]
    """
    if any(n > capacity for n in lengths):
        raise ValueError(f"a sequence is longer than the pack capacity {capacity}: {max(lengths)}")
    bins: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda j: -lengths[j]):
        for b, free in enumerate(room):
            if lengths[i] <= free:
                bins[b].append(i)
                room[b] -= lengths[i]
                break
        else:
            bins.append([i])
            room.append(capacity - lengths[i])
    return bins


def _packed_inputs(
    seqs: Sequence[torch.Tensor], bins: list[list[int]], width: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows = len(bins)
    device = seqs[0].device
    ids = torch.zeros(rows, width, dtype=torch.long, device=device)
    pos = torch.zeros(rows, width, dtype=torch.long, device=device)
    doc = torch.full((rows, width), -1, dtype=torch.long, device=device)
    for r, members in enumerate(bins):
        start = 0
        for d, i in enumerate(members):
            n = seqs[i].numel()
            ids[r, start : start + n] = seqs[i]
            pos[r, start : start + n] = torch.arange(n, device=device)
            doc[r, start : start + n] = d
            start += n
    causal = torch.ones(width, width, dtype=torch.bool, device=device).tril()
    same = doc.unsqueeze(-1) == doc.unsqueeze(-2)
    # the unused tail of a row attends to itself only, so no attention row is empty (sdpa would give NaN)
    eye = torch.eye(width, dtype=torch.bool, device=device)
    mask = (same & causal & (doc.unsqueeze(-1) >= 0)) | eye
    return ids, pos, mask.unsqueeze(1)


def _forward(model: Any, **kwargs: Any) -> torch.Tensor:  # noqa: ANN401
    out = model(**kwargs, use_cache=False)
    return out["logits"] if isinstance(out, dict) else out.logits


def _score_packed(
    model: Any, seqs: Sequence[torch.Tensor], return_logits: bool  # noqa: ANN401
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    lengths = [s.numel() for s in seqs]
    width = max(lengths)
    bins = pack_bins(lengths, width)
    ids, pos, mask = _packed_inputs(seqs, bins, width)
    logits = _forward(model, input_ids=ids, attention_mask=mask, position_ids=pos)
    lps: list[torch.Tensor] = [torch.empty(0)] * len(seqs)
    out_logits: list[torch.Tensor] = [torch.empty(0)] * len(seqs)
    for r, members in enumerate(bins):
        start = 0
        for i in members:
            n = lengths[i]
            row = logits[r, start : start + n]
            lps[i] = aligned_log_probs(row, seqs[i])
            if return_logits:
                out_logits[i] = _align_logits(row)
            start += n
    return lps, (out_logits if return_logits else None)


def _score_padded(
    model: Any, seqs: Sequence[torch.Tensor], return_logits: bool  # noqa: ANN401
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    lengths = [s.numel() for s in seqs]
    width = max(lengths)
    ids = torch.zeros(len(seqs), width, dtype=torch.long, device=seqs[0].device)
    attn = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, width - lengths[i] :] = s
        attn[i, width - lengths[i] :] = 1
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    logits = _forward(model, input_ids=ids, attention_mask=attn, position_ids=pos)
    lps, out_logits = [], []
    for i, s in enumerate(seqs):
        row = logits[i, width - lengths[i] :]
        lps.append(aligned_log_probs(row, s))
        if return_logits:
            out_logits.append(_align_logits(row))
    return lps, (out_logits if return_logits else None)


def score_sequences(
    model: Any,  # noqa: ANN401
    seqs: Sequence[torch.Tensor],
    *,
    packed: bool,
    return_logits: bool = False,
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """Teacher-forced log-probs of each 1-D int64 sequence (``lp[0] = 0``), and optionally aligned logits.

    Args:
        model: a causal LM called as ``model(input_ids=..., attention_mask=..., position_ids=...)``.
        seqs: the token sequences (each with at least one token).
        packed: pack the sequences padding-free (block-causal mask) instead of left-padding them.
        return_logits: also return ``[L_i, V]`` logits aligned with the tokens (``[0]`` is zeros).

    Returns:
        ``(log_probs, logits)``: lists of ``[L_i]`` float32 and ``[L_i, V]`` tensors (``logits`` is ``None``
        unless asked for).
    """
    if not len(seqs):
        raise ValueError("score_sequences needs at least one sequence")
    for i, s in enumerate(seqs):
        if s.dim() != 1 or s.numel() == 0:
            raise ValueError(f"sequence {i} must be a non-empty 1-D tensor of ids, got shape {tuple(s.shape)}")
    seqs = [s.long() for s in seqs]
    if packed:
        return _score_packed(model, seqs, return_logits)
    return _score_padded(model, seqs, return_logits)
