"""Inverse chat-template parsers: rendered chat text back into message dicts (``History.from_text``).

Each parser takes the rendered text (and optionally the tokenizer, for its BOS/EOS strings) and returns
a list of ``{"role", "content", "is_complete", "tool_calls", "tool_responses"}`` dicts. A message whose
closing marker is missing (a generation cut short) gets ``is_complete=False``.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["PARSERS", "parse_chatml"]

_TOOL_CALL = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.DOTALL)
_TOOL_RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.DOTALL)
_CHATML_BLOCK = re.compile(r"<\|im_start\|>(.*?)(<\|im_end\|>|<\|endoftext\|>|$)", re.DOTALL)
_LLAMA_BLOCK = re.compile(r"<\|header_start\|>(\w+)<\|header_end\|>\n\n(.*?)(<\|eot\|>|$)", re.DOTALL)
_PREFIXED = re.compile(r"(User:|Assistant:)\s*(.*?)(?=User:|Assistant:|$)", re.DOTALL)
_HINT = (
    "A common cause is that special tokens were dropped when decoding: did you set "
    "skip_special_tokens=False (and include_stop_str_in_output=True for vLLM)?"
)


def _message(role: str, content: str, is_complete: bool = True) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "role": role,
        "content": content,
        "is_complete": is_complete,
        "tool_calls": None,
        "tool_responses": None,
    }
    calls = []
    for raw in _TOOL_CALL.findall(content):
        try:
            calls.append(json.loads(raw))
        except json.JSONDecodeError:
            continue  # a malformed call stays in the content text only
    if calls:
        msg["tool_calls"] = calls
    responses = _TOOL_RESPONSE.findall(content)
    if responses:
        msg["tool_responses"] = responses
    return msg


def _nonempty(messages: list[dict[str, Any]], text: str, fmt: str) -> list[dict[str, Any]]:
    if not messages:
        raise RuntimeError(f"Could not parse a single {fmt} message out of {text!r}. {_HINT}")
    return messages


def parse_chatml(text: str, tokenizer: Any = None) -> list[dict[str, Any]]:
    """ChatML (``chatml_format`` and ``qwen``): ``<|im_start|>role\\ncontent<|im_end|>`` blocks.

    Examples:
        >>> [m["role"] for m in parse_chatml("<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\nyo")]
        ['user', 'assistant']
    """
    messages = []
    for match in _CHATML_BLOCK.finditer(text):
        role, sep, content = match.group(1).partition("\n")
        if not sep:  # "<|im_start|>assistant" with nothing after it: no message yet
            continue
        messages.append(_message(role.strip(), content.strip(), is_complete=bool(match.group(2))))
    return _nonempty(messages, text, "ChatML")


def parse_llama(text: str, tokenizer: Any = None) -> list[dict[str, Any]]:
    """Llama-4 headers: ``<|header_start|>role<|header_end|>\\n\\ncontent<|eot|>``."""
    for bos in ("<|begin_of_text|>", getattr(tokenizer, "bos_token", None)):
        if bos and text.startswith(bos):
            text = text[len(bos) :]
    messages = [
        _message(role, content.strip(), is_complete=bool(end))
        for role, content, end in _LLAMA_BLOCK.findall(text)
        if content.strip()
    ]
    return _nonempty(messages, text, "Llama")


def _strip_tokens(text: str, tokenizer: Any) -> str:
    for attr in ("bos_token", "eos_token"):
        token = getattr(tokenizer, attr, None)
        if token:
            text = text.replace(token, "\n\n" if attr == "eos_token" else "")
    return text


def _prefixed(text: str, fmt: str) -> list[dict[str, Any]]:
    # Text before the first "User:"/"Assistant:" is a system paragraph (the templates render it bare).
    first = _PREFIXED.search(text)
    head = text[: first.start()] if first else text
    messages = [_message("system", head.strip())] if head.strip() else []
    for prefix, content in _PREFIXED.findall(text):
        if content.strip():
            messages.append(_message("user" if prefix == "User:" else "assistant", content.strip()))
    return _nonempty(messages, text, fmt)


def parse_falcon(text: str, tokenizer: Any = None) -> list[dict[str, Any]]:
    """``User: ...`` / ``Assistant: ...`` paragraphs; a leading bare paragraph is the system prompt."""
    return _prefixed(text, "Falcon")


def parse_deepseek(text: str, tokenizer: Any = None) -> list[dict[str, Any]]:
    """DeepSeek: the Falcon layout with a BOS token first and an EOS token after each assistant turn."""
    text = re.sub(r"^<[^>]+>|<[^>]+>$", "", _strip_tokens(text, tokenizer).strip())
    return _prefixed(text, "DeepSeek")


def parse_dialogpt(text: str, tokenizer: Any = None) -> list[dict[str, Any]]:
    """DialoGPT: turns separated by the EOS token, alternating user / assistant from a user turn."""
    eos = getattr(tokenizer, "eos_token", None) or "<|endoftext|>"
    turns = text.split(eos)
    messages = []
    for i, turn in enumerate(turns):
        last = i == len(turns) - 1
        if not turn.strip():
            continue
        # The final piece has no EOS after it: a reply still being written.
        messages.append(_message("user" if i % 2 == 0 else "assistant", turn.strip(), is_complete=not last))
    return _nonempty(messages, text, "DialoGPT")


PARSERS = {
    "chatml_format": parse_chatml,
    "qwen": parse_chatml,
    "dialogpt": parse_dialogpt,
    "falcon": parse_falcon,
    "deepseek": parse_deepseek,
    "llama": parse_llama,
}
