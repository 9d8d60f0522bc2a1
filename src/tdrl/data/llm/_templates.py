"""The named chat templates (``chat_template_name=...``) and the registry ``add_chat_template`` extends.

Each template is a Jinja string rendered by ``tokenizer.apply_chat_template``. Assistant content sits in
``{% generation %}`` blocks so that ``return_assistant_tokens_mask=True`` marks exactly the tokens an
assistant wrote. The renderings are those of TorchRL 0.14.1's templates of the same name (checked by
``tests/data/llm/test_templates.py`` against recorded golden text):

* ``chatml_format``: ``<|im_start|>{role}\\n{content}<|im_end|>\\n`` per message (the default);
* ``qwen``: Qwen2.5's ChatML with a default system prompt, ``<tool_call>`` blocks and tool responses;
* ``dialogpt``: contents separated by the EOS token;
* ``falcon``: ``User: ...`` / ``Assistant: ...`` paragraphs;
* ``deepseek``: BOS, ``User: ...`` paragraphs, ``Assistant: ...`` closed by EOS;
* ``llama``: Llama-4 headers ``<|header_start|>{role}<|header_end|>\\n\\n{content}<|eot|>``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tdrl._utils import logger

__all__ = ["CHAT_TEMPLATES", "add_chat_template", "template_name_for"]

_CHATML = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\n' -}}"
    "{%- if message['role'] == 'assistant' -%}"
    "{%- generation -%}{{- message['content'] -}}{%- endgeneration -%}"
    "{%- else -%}{{- message['content'] -}}{%- endif -%}"
    "{{- '<|im_end|>\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}"
)

_QWEN_TOOLS_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_QWEN_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call><|im_end|>\n"
)
_QWEN_DEFAULT_SYSTEM = "You are a helpful assistant."

_QWEN = (
    # System header: the first system message, else a default one; the tool signatures join it.
    "{%- set has_system = messages and messages[0]['role'] == 'system' -%}"
    "{%- set system = messages[0]['content'] if has_system else '" + _QWEN_DEFAULT_SYSTEM + "' -%}"
    "{{- '<|im_start|>system\n' + system -}}"
    "{%- if tools -%}"
    "{{- " + repr(_QWEN_TOOLS_HEADER) + " -}}"
    "{%- for tool in tools -%}{{- '\n' + (tool | tojson) -}}{%- endfor -%}"
    "{{- " + repr(_QWEN_TOOLS_FOOTER) + " -}}"
    "{%- else -%}{{- '<|im_end|>\n' -}}{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- set role = message['role'] -%}"
    "{%- if role == 'user' or (role == 'system' and not loop.first) -%}"
    "{{- '<|im_start|>' + role + '\n' + message['content'] + '<|im_end|>\n' -}}"
    "{%- elif role == 'assistant' -%}"
    "{{- '<|im_start|>assistant' -}}"
    "{%- if not message['tool_calls'] -%}"
    "{{- '\n' -}}{%- generation -%}{{- message['content'] -}}{%- endgeneration -%}"
    "{%- else -%}"
    "{%- if message['content'] -%}"
    "{{- '\n' -}}{%- generation -%}{{- message['content'] -}}{%- endgeneration -%}"
    "{%- endif -%}"
    "{%- for call in message['tool_calls'] -%}{%- generation -%}"
    "{%- set call = call['function'] if call['function'] is defined else call -%}"
    "{{- '\n<tool_call>\n{\"name\": \"' + call['name'] + '\", \"arguments\": ' -}}"
    "{{- (call['arguments'] | tojson) + '}\n</tool_call>' -}}"
    "{%- endgeneration -%}{%- endfor -%}"
    "{%- endif -%}"
    "{{- '<|im_end|>\n' -}}"
    "{%- elif role == 'tool' -%}"
    # Consecutive tool messages share one <|im_start|>tool ... <|im_end|> block.
    "{%- if loop.first or messages[loop.index0 - 1]['role'] != 'tool' -%}{{- '<|im_start|>tool' -}}{%- endif -%}"
    "{{- '\n<tool_response>\n' -}}"
    "{{- message['tool_responses'] if message['tool_responses'] else message['content'] -}}"
    "{{- '\n</tool_response>' -}}"
    "{%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}"
)

_DIALOGPT = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{%- generation -%}{{- message['content'] -}}{%- endgeneration -%}{{- eos_token -}}"
    "{%- elif message['role'] == 'user' -%}{{- message['content'] + eos_token -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- ' ' -}}{%- endif -%}"
)

# TorchRL's falcon template closes an assistant turn with one newline and every other turn with two
# (a side effect of Jinja's trim_blocks there); the rendering is kept identical.
_FALCON = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{- 'Assistant:' -}}{%- generation -%}{{- ' ' + message['content'] -}}{%- endgeneration -%}{{- '\n' -}}"
    "{%- elif message['role'] == 'user' -%}{{- 'User: ' + message['content'] + '\n\n' -}}"
    "{%- elif message['role'] == 'system' -%}{{- message['content'] + '\n\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}"
)

_DEEPSEEK = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'user' -%}{{- 'User: ' + message['content'] + '\n\n' -}}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{{- 'Assistant:' -}}{%- generation -%}{{- ' ' + message['content'] -}}{%- endgeneration -%}"
    "{{- eos_token -}}"
    "{%- elif message['role'] == 'system' -%}{{- message['content'] + '\n\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}"
)

_LLAMA_CONTENT = (
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'text' -%}{{- part['text'] | trim -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
)
_LLAMA = (
    "{{- bos_token -}}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{%- set system_message = messages[0]['content'] | trim -%}{%- set messages = messages[1:] -%}"
    "{%- else -%}{%- set system_message = '' -%}{%- endif -%}"
    "{%- if system_message -%}"
    "{{- '<|header_start|>system<|header_end|>\n\n' + system_message + '<|eot|>' -}}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{{- '<|header_start|>' + message['role'] + '<|header_end|>\n\n' -}}"
    "{%- if message['role'] == 'assistant' -%}"
    "{%- generation -%}" + _LLAMA_CONTENT + "{%- endgeneration -%}"
    "{%- else -%}" + _LLAMA_CONTENT + "{%- endif -%}"
    "{{- '<|eot|>' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|header_start|>assistant<|header_end|>\n\n' -}}{%- endif -%}"
)

CHAT_TEMPLATES: dict[str, str] = {
    "chatml_format": _CHATML,
    "qwen": _QWEN,
    "dialogpt": _DIALOGPT,
    "falcon": _FALCON,
    "deepseek": _DEEPSEEK,
    "llama": _LLAMA,
}

# Model-name keywords that select a template when neither a template nor a name is given; checked in
# order, user-registered families first.
_BUILTIN_FAMILIES: list[tuple[str, tuple[str, ...]]] = [
    ("qwen", ("qwen",)),
    ("dialogpt", ("dialogpt", "microsoft/dialo")),
    ("falcon", ("falcon",)),
    ("deepseek", ("deepseek",)),
    ("llama", ("llama",)),
]
_CUSTOM_FAMILIES: dict[str, Sequence[str]] = {}
INVERSE_PARSERS: dict[str, Callable[[str], Any]] = {}


def add_chat_template(
    template_name: str,
    template: str,
    inverse_parser: Callable[[str], Any] | None = None,
    model_family_keywords: list[str] | None = None,
) -> None:
    """Registers a chat template under ``template_name`` for ``History.apply_chat_template``/``from_text``.

    Args:
        template_name: the name passed later as ``chat_template_name``.
        template: a Jinja chat template; it must wrap assistant content in ``{% generation %}`` blocks so
            that assistant token masks can be computed.
        inverse_parser: ``text -> History`` used by ``History.from_text(chat_template_name=template_name)``.
        model_family_keywords: case-insensitive substrings of ``tokenizer.name_or_path`` that select this
            template automatically.

    Raises:
        ValueError: when the template has no ``{% generation %}`` block.

    Examples:
        >>> add_chat_template("bare", "{% for m in messages %}{% generation %}{{ m['content'] }}{% endgeneration %}{% endfor %}")
        >>> "bare" in CHAT_TEMPLATES
        True
        >>> del CHAT_TEMPLATES["bare"]
    """
    if "generation" not in template or "{%" not in template:
        raise ValueError(
            f"Template {template_name!r} must include '{{% generation %}}' blocks around assistant message "
            "content to enable assistant token masking."
        )
    CHAT_TEMPLATES[template_name] = template
    if inverse_parser is not None:
        INVERSE_PARSERS[template_name] = inverse_parser
    if model_family_keywords is not None:
        _CUSTOM_FAMILIES[template_name] = list(model_family_keywords)
    logger.info("Added chat template %r with assistant token masking support", template_name)


def template_name_for(tokenizer: Any) -> str | None:
    """The registered template name a tokenizer's ``name_or_path`` selects, or None when none matches."""
    model_name = str(getattr(tokenizer, "name_or_path", "") or "").lower()
    for name, keywords in _CUSTOM_FAMILIES.items():
        if any(k.lower() in model_name for k in keywords):
            return name
    for name, keywords in _BUILTIN_FAMILIES:
        if any(k in model_name for k in keywords):
            return name
    return None
