"""The prompt prefill of ``TransformersWrapper``: prompt log-probs and the KV cache ``generate`` continues from.

Generation with log-probs needs ``log p(prompt[i] | prompt[:i])`` too (``log_probs.prompt`` / ``full``). The
wrapper runs the prompts but their last token once, keeps the KV cache for ``generate`` and reads the prompt
log-probs from that same pass, so no transformer layer runs twice. What remains is the vocabulary projection,
the largest matmul of a small model: a left-padded batch holds many pad positions, and ``generate`` keeps
only the last position's logits. So when the model's logits are exactly ``head(base(...).last_hidden_state)``
(checked once per model on a short probe, since some architectures scale or soft-cap their logits), the prefill
runs the base model and projects only the real, scored positions of one row per prompt; otherwise it runs the
full model. Prompts are prefilled once each, and the cache is repeated for ``num_samples`` afterwards.

With one sample per prompt a separate prefill saves nothing: ``generate`` runs its own over the whole prompt
and keeps the last position's logits only. There ``PrefillCapture`` keeps the base model's output of that
first call (the final hidden states of every prompt position, which the head would project), and the prompt
log-probs are read from it after ``generate``: the prompt costs one head projection of its real positions
more than plain generation, and no extra pass of the transformer layers.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

__all__ = ["PrefillCapture", "gathered_log_probs", "prefill_prompts", "split_model"]

# model -> whether head(base(x)) reproduces model(x).logits (checked once per model)
_SPLIT_OK: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def gathered_log_probs(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """``log_softmax(logits)[..., ids]`` in float32 (``torch.logsumexp`` is slower on CPU than this).

    Examples:
        >>> import torch
        >>> gathered_log_probs(torch.zeros(2, 4), torch.tensor([1, 3]))
        tensor([-1.3863, -1.3863])
    """
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


def _cache_of(out: Any) -> Any:  # noqa: ANN401
    # transformers 5 names the returned cache ``cache`` (``past_key_values`` is a deprecated alias)
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def split_model(model: Any, probe: torch.Tensor) -> tuple[Any, Any] | None:  # noqa: ANN401
    """``(base, head)`` when ``model``'s logits are ``head(base(...).last_hidden_state)``, else ``None``."""
    base = getattr(model, "base_model", None)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if base is None or base is model or head is None:
        return None
    ok = _SPLIT_OK.get(model)
    if ok is None:
        try:
            with torch.no_grad():
                full = model(input_ids=probe, use_cache=False).logits
                split = head(base(input_ids=probe, use_cache=False).last_hidden_state)
            ok = full.shape == split.shape and bool(torch.allclose(full.float(), split.float(), rtol=0, atol=1e-6))
        except (TypeError, AttributeError, RuntimeError):
            ok = False  # an unusual base model signature: fall back to the full forward
        _SPLIT_OK[model] = ok
    return (base, head) if ok else None


def prefill_prompts(
    model: Any,  # noqa: ANN401
    prompts: list[torch.Tensor],
    ids: torch.Tensor,
    attn: torch.Tensor,
    n: int,
) -> tuple[list[torch.Tensor], Any]:  # noqa: ANN401
    """Prompt log-probs (``[0] = 0``) and the KV cache of ``ids[:, :-1]``, repeated ``n`` times per prompt.

    Args:
        model: a ``transformers`` causal LM.
        prompts: the ragged prompts (one 1-D tensor each).
        ids: the prompts left-padded ``[B, L]`` (``L >= 2``), one row per prompt.
        attn: their attention mask ``[B, L]``.
        n: samples per prompt: the returned cache holds each prompt's row ``n`` times (grouped).

    Returns:
        ``(log_probs, cache)``: one ``[len(prompt)]`` float32 tensor per prompt, and the cache for ``generate``.
    """
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    inputs = {"input_ids": ids[:, :-1], "attention_mask": attn[:, :-1], "position_ids": pos[:, :-1], "use_cache": True}
    scored, targets = _scored_positions(ids, attn)
    parts = split_model(model, ids[:1, -min(4, ids.shape[1]) :])
    with torch.no_grad():
        if parts is None:
            out = model(**inputs)
            lp = gathered_log_probs(out.logits[scored], targets)
        else:
            base, head = parts
            out = base(**inputs)
            lp = gathered_log_probs(head(out.last_hidden_state[scored]), targets)
    cache = _cache_of(out)
    if n > 1:
        cache.batch_repeat_interleave(n)
    return _per_prompt(lp, scored), cache


def _scored_positions(ids: torch.Tensor, attn: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # position t predicts token t + 1; it is scored when both are real (left padding: when t is real)
    scored = attn[:, :-1].bool() & attn[:, 1:].bool()
    return scored, ids[:, 1:][scored]


def _per_prompt(lp: torch.Tensor, scored: torch.Tensor) -> list[torch.Tensor]:
    zero = torch.zeros(1, device=lp.device)
    return [torch.cat([zero, chunk]) for chunk in lp.split(scored.sum(-1).tolist())]


class PrefillCapture:
    """Keeps the final hidden states of the first call of a base model (the prefill of ``generate``).

    Built from ``split_model``'s ``(base, head)``: a forward hook on ``base`` stores the output of its first
    call and removes itself, so the decoding steps that follow cost nothing more. ``log_probs`` then projects
    the real prompt positions through ``head``.

    Args:
        parts: ``(base, head)`` with ``model(x).logits == head(base(x).last_hidden_state)``.

    Examples:
        >>> import torch, transformers
        >>> cfg = transformers.GPT2Config(n_layer=1, n_head=1, n_embd=8, vocab_size=16)
        >>> model = transformers.GPT2LMHeadModel(cfg)
        >>> ids, attn = torch.tensor([[0, 3, 4, 5]]), torch.tensor([[0, 1, 1, 1]])
        >>> capture = PrefillCapture(split_model(model.eval(), ids[:, 1:]))
        >>> with torch.no_grad():
        ...     _ = model(input_ids=ids, attention_mask=attn)
        >>> [lp.shape for lp in capture.log_probs(ids, attn)]
        [torch.Size([3])]
    """

    def __init__(self, parts: tuple[Any, Any]) -> None:
        self._base, self._head = parts
        self._hidden: torch.Tensor | None = None
        self._handle = self._base.register_forward_hook(self._keep)

    def _keep(self, module: Any, args: Any, output: Any) -> None:  # noqa: ANN401, ARG002
        hidden = getattr(output, "last_hidden_state", None)
        self._hidden = hidden if hidden is not None else output[0]
        self._handle.remove()

    def close(self) -> None:
        """Removes the hook if the base model was never called."""
        self._handle.remove()

    def log_probs(self, ids: torch.Tensor, attn: torch.Tensor) -> list[torch.Tensor] | None:
        """One ``[len(prompt)]`` tensor per row of the left-padded ``ids`` (``[0] = 0``), or ``None`` when the
        first call did not see the whole of ``ids`` (e.g. a chunked prefill)."""
        self.close()
        hidden = self._hidden
        if hidden is None or tuple(hidden.shape[:2]) != tuple(ids.shape):
            return None
        scored, targets = _scored_positions(ids, attn)
        with torch.no_grad():
            lp = gathered_log_probs(self._head(hidden[:, :-1][scored]), targets)
        return _per_prompt(lp, scored)
