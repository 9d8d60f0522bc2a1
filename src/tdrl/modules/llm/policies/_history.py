"""History-mode helpers: chat-templating ``History`` prompts and parsing generated text back into messages.

The functions use the ``History`` API of :mod:`tdrl.data.llm` through the objects they are given
(``apply_chat_template``, ``from_text``, ``extend``), so this module only needs the class of the prompt.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import lazy_stack

from tdrl.data.llm.containers import template_kwargs

__all__ = ["template_kwargs", "render", "tokenize_with_assistant_mask", "responses_from_full_text"]


def render(history: Any, tokenizer: Any, add_generation_prompt: bool, **kwargs: Any) -> list[str]:  # noqa: ANN401
    """One templated string per conversation of a ``[B, T]`` history."""
    text = history.apply_chat_template(
        tokenizer=tokenizer, add_generation_prompt=add_generation_prompt, tokenize=False, **kwargs
    )
    return [text] if isinstance(text, str) else list(text)


def tokenize_with_assistant_mask(
    history: Any, tokenizer: Any, **kwargs: Any  # noqa: ANN401
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """Token ids of each full conversation and, when the template marks them, its assistant-token mask."""
    out = history.apply_chat_template(
        tokenizer=tokenizer,
        add_generation_prompt=False,
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
        padding=False,
        **kwargs,
    )
    ids = [torch.as_tensor(i, dtype=torch.long).reshape(-1) for i in out.get("input_ids", as_list=True)]
    if "assistant_masks" not in out.keys():
        return ids, None
    masks = [torch.as_tensor(m).bool().reshape(-1) for m in out.get("assistant_masks", as_list=True)]
    if not any(bool(m.any()) for m in masks):
        return ids, None  # a template without {% generation %} marks nothing: no assistant mask
    return ids, masks


def responses_from_full_text(
    prompts: Any,  # noqa: ANN401
    full_text: list[str],
    response_text: list[str],
    tokenizer: Any,  # noqa: ANN401
    chat_template_name: str | None,
) -> Any:  # noqa: ANN401
    """Parses each ``prompt + response`` string into messages and keeps those after the prompt's.

    Returns a lazy stack (one ``History`` of new messages per sample). A response that parses into no
    complete message becomes one assistant message holding the generated text.
    """
    cls = type(prompts)
    out = []
    for i, (text, reply) in enumerate(zip(full_text, response_text, strict=True)):
        prompt = prompts[i]
        n_prompt = prompt.batch_size[-1] if prompt.batch_dims else 1
        parsed = cls.from_text(text, chat_template_name=chat_template_name, tokenizer=tokenizer)
        if parsed.batch_dims and parsed.batch_size[-1] > n_prompt:
            out.append(parsed[..., n_prompt:])
        else:
            out.append(cls(role=["assistant"], content=[reply], batch_size=[1]))
    return lazy_stack(out)
