"""Tiny offline tokenizer for the LLM data/env tests: a byte-level BPE trained in-process.

Nothing is downloaded: the vocabulary is learned from a fixed corpus in a few milliseconds, wrapped in
``transformers.PreTrainedTokenizerFast`` with its own pad token (distinct from EOS), left padding and a
ChatML-style chat template carrying ``{% generation %}`` blocks (so assistant masks work).
"""

from __future__ import annotations

import functools
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SPECIAL_TOKENS = [
    "<pad>",
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<s>",
    "</s>",
    "<|header_start|>",
    "<|header_end|>",
    "<|eot|>",
]

CORPUS = [
    "You are a helpful assistant. Think step by step.",
    "What is 2 + 3? The answer is 5. <think>2 plus 3</think> <answer>5</answer>",
    "Hello, how are you? I am fine, thanks! Bonjour, ça va? 你好",
    "User: question Assistant: answer system user assistant tool",
    "Using the numbers [1, 2, 3], create an equation that equals 6.",
    "#### 42 Natalia sold clips to 48 of her friends in April.",
    "0 1 2 3 4 5 6 7 8 9 + - * / = ( ) [ ] < > { } \" ' : ; , . ! ?",
]

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['role'] == 'assistant' %}{% generation %}{{- message['content'] }}{% endgeneration %}"
    "{%- else %}{{- message['content'] }}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@functools.cache
def _trained_tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    return tok.to_str()


def tiny_tokenizer(vocab_size: int = 400, *, name_or_path: str = "tiny-chatml", chat_template: str | None = None):
    """A fresh ``PreTrainedTokenizerFast`` (pad ``<pad>``, EOS ``<|im_end|>``, left padding)."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(_trained_tokenizer(vocab_size)),
        pad_token="<pad>",
        eos_token="<|im_end|>",
        bos_token="<s>",
        padding_side="left",
    )
    tok.chat_template = CHAT_TEMPLATE if chat_template is None else chat_template
    tok.name_or_path = name_or_path
    return tok
