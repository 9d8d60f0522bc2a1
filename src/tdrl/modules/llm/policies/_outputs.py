"""Laying ragged per-sample results out in the output containers, padded or ragged.

Padded layout (``pad_output=True``), the same for tokens, masks and log-probs: ``prompt`` is left-padded to the
longest prompt, ``response`` right-padded to the longest response, and ``full = cat(prompt, response)``, so
``full`` may carry pads on both sides; ``Masks.all_attention_mask`` marks its real tokens. Ragged layout
(``pad_output=False``): a lazy stack of one container per sample, each holding 1-D tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from tensordict import TensorClass, lazy_stack

from tdrl.modules.llm.policies._layout import pad, scatter_like
from tdrl.modules.llm.policies.containers import LogProbs, Masks, Tokens

__all__ = ["Ragged", "group", "layout_generation", "layout_scores"]


@dataclass
class Ragged:
    """Per-sample results of one forward, as flat lists (``B * num_samples`` entries when sampling)."""

    prompt: list[torch.Tensor] = field(default_factory=list)
    response: list[torch.Tensor] | None = None
    full: list[torch.Tensor] | None = None
    prompt_lp: list[torch.Tensor] | None = None
    response_lp: list[torch.Tensor] | None = None
    full_lp: list[torch.Tensor] | None = None
    assistant: list[torch.Tensor] | None = None


def group(items: Sequence[TensorClass], batch: tuple[int, ...]) -> TensorClass:
    """Lazy-stacks per-sample containers into ``batch`` = ``(B,)`` or ``(B, n)``."""
    if len(batch) == 1:
        return lazy_stack(list(items))
    n = batch[1]
    return lazy_stack([lazy_stack(list(items[b * n : (b + 1) * n])) for b in range(batch[0])])


def _dense(cls: type, batch: tuple[int, ...], **fields: torch.Tensor | None) -> TensorClass:
    shaped = {k: (None if v is None else v.reshape(*batch, *v.shape[1:])) for k, v in fields.items()}
    return cls(**shaped, padded=True, batch_size=list(batch))


def layout_generation(
    r: Ragged, *, padded: bool, pad_id: int, batch: tuple[int, ...], with_log_probs: bool
) -> dict[str, TensorClass]:
    """Tokens, Masks and (optionally) LogProbs of generated samples: ``full = prompt + response``."""
    assert r.response is not None
    ones = [torch.ones(p.numel(), dtype=torch.bool, device=p.device) for p in r.prompt]
    resp_ones = [torch.ones(x.numel(), dtype=torch.bool, device=x.device) for x in r.response]
    if not padded:
        toks = [Tokens(prompt=p, response=x, full=torch.cat([p, x]), padded=False) for p, x in zip(r.prompt, r.response)]
        masks = [
            Masks(all_attention_mask=torch.cat([o, ro]), all_assistant_mask=torch.cat([~o, ro]), padded=False)
            for o, ro in zip(ones, resp_ones)
        ]
        out = {"tokens": group(toks, batch), "masks": group(masks, batch)}
        if with_log_probs and r.prompt_lp is None:  # an engine that omitted prompt log-probs
            out["log_probs"] = group([LogProbs(response=lr, padded=False) for lr in r.response_lp], batch)
        elif with_log_probs:
            lps = [
                LogProbs(prompt=lp, response=lr, full=torch.cat([lp, lr]), padded=False)
                for lp, lr in zip(r.prompt_lp, r.response_lp)
            ]
            out["log_probs"] = group(lps, batch)
        return out
    prompt, response = pad(r.prompt, pad_id, "left"), pad(r.response, pad_id, "right")
    attn_p, attn_r = pad(ones, False, "left"), pad(resp_ones, False, "right")
    out = {
        "tokens": _dense(Tokens, batch, prompt=prompt, response=response, full=torch.cat([prompt, response], -1)),
        "masks": _dense(
            Masks,
            batch,
            all_attention_mask=torch.cat([attn_p, attn_r], -1),
            all_assistant_mask=torch.cat([torch.zeros_like(attn_p), attn_r], -1),
        ),
    }
    if with_log_probs and r.prompt_lp is None:
        out["log_probs"] = _dense(LogProbs, batch, response=pad(r.response_lp, 0.0, "right"))
    elif with_log_probs:
        lp, lr = pad(r.prompt_lp, 0.0, "left"), pad(r.response_lp, 0.0, "right")
        out["log_probs"] = _dense(LogProbs, batch, prompt=lp, response=lr, full=torch.cat([lp, lr], -1))
    return out


def layout_scores(
    r: Ragged, *, padded: bool, pad_id: int, batch: tuple[int, ...], dense_mask: torch.Tensor | None
) -> dict[str, TensorClass]:
    """Tokens, Masks and LogProbs of scored sequences.

    With ``dense_mask`` (the input was a padded tensor), ``full`` keeps the input's layout: values are written
    at the mask's true positions. Otherwise ``full`` is left-padded (``padded``) or ragged. ``prompt`` and
    ``response`` parts are filled when the prompt lengths are known (``r.prompt``).
    """
    assert r.full is not None and r.full_lp is not None
    split = bool(r.prompt)
    plen = [p.numel() for p in r.prompt] if split else None
    attn = [torch.ones(f.numel(), dtype=torch.bool, device=f.device) for f in r.full]
    assistant = r.assistant
    if assistant is None and split:
        assistant = [torch.arange(f.numel(), device=f.device) >= n for f, n in zip(r.full, plen)]
    parts: dict[str, dict[str, list[torch.Tensor]]] = {"tokens": {"full": r.full}, "log_probs": {"full": r.full_lp}}
    if split:
        for name, values in (("tokens", r.full), ("log_probs", r.full_lp)):
            parts[name]["prompt"] = [v[:n] for v, n in zip(values, plen)]
            parts[name]["response"] = [v[n:] for v, n in zip(values, plen)]
    masks = {"all_attention_mask": attn, "all_assistant_mask": assistant}
    if not padded and dense_mask is None:
        return {
            "tokens": group([Tokens(**dict(zip(parts["tokens"], v)), padded=False) for v in zip(*parts["tokens"].values())], batch),
            "log_probs": group(
                [LogProbs(**dict(zip(parts["log_probs"], v)), padded=False) for v in zip(*parts["log_probs"].values())], batch
            ),
            "masks": group(
                [Masks(all_attention_mask=a, all_assistant_mask=None if assistant is None else assistant[i], padded=False)
                 for i, a in enumerate(attn)],
                batch,
            ),
        }
    return _dense_scores(parts, masks, pad_id, batch, dense_mask)


def _dense_scores(
    parts: dict[str, dict[str, list[torch.Tensor]]],
    masks: dict[str, list[torch.Tensor] | None],
    pad_id: int,
    batch: tuple[int, ...],
    dense_mask: torch.Tensor | None,
) -> dict[str, TensorClass]:
    def full_layout(values: list[torch.Tensor], fill: float | int | bool) -> torch.Tensor:
        return pad(values, fill, "left") if dense_mask is None else scatter_like(values, dense_mask, fill)

    out_tokens = {"full": full_layout(parts["tokens"]["full"], pad_id)}
    out_lp = {"full": full_layout(parts["log_probs"]["full"], 0.0)}
    if "prompt" in parts["tokens"]:
        out_tokens["prompt"] = pad(parts["tokens"]["prompt"], pad_id, "left")
        out_tokens["response"] = pad(parts["tokens"]["response"], pad_id, "right")
        out_lp["prompt"] = pad(parts["log_probs"]["prompt"], 0.0, "left")
        out_lp["response"] = pad(parts["log_probs"]["response"], 0.0, "right")
    attn = full_layout(masks["all_attention_mask"], False)
    assistant = masks["all_assistant_mask"]
    return {
        "tokens": _dense(Tokens, batch, **out_tokens),
        "log_probs": _dense(LogProbs, batch, **out_lp),
        "masks": _dense(
            Masks,
            batch,
            all_attention_mask=attn,
            all_assistant_mask=None if assistant is None else full_layout(assistant, False),
        ),
    }
