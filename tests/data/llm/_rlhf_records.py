"""Local RLHF records (prompt / label and prompt / chosen / rejected) and the tokenizer set-up shared by the
TorchRL recorder (``record_torchrl_rlhf_golden.py``) and the tdrl tests."""

from __future__ import annotations

PROMPTS = [
    {"prompt": "What is 2 + 3?", "label": " The answer is 5."},
    {"prompt": "Hello, how are you?", "label": " I am fine, thanks!"},
    {"prompt": "You are a helpful assistant. Think step by step. Using the numbers [1, 2, 3], create an equation",
     "label": " that equals 6."},
    {"prompt": "User: question", "label": " Assistant: answer"},
]

COMPARISONS = [
    {"prompt": "What is 2 + 3?", "chosen": "The answer is 5 thanks", "rejected": "The answer is 6 thanks"},
    {"prompt": "Hello", "chosen": "I am fine, thanks!", "rejected": "I am fine, thanks!"},  # identical: dropped
    {"prompt": "Hello", "chosen": "fine", "rejected": "bad"},  # too short: dropped
    {"prompt": "User: question", "chosen": "Assistant: answer step by step", "rejected": "Hello how are you ?"},
]

TEXTS = ["You are a helpful assistant.", "What is 2 + 3? The answer is 5.", "Hello"]
MAX_LENGTH = 12


def gpt2_like(tokenizer):
    """The loaders' convention (TorchRL's too): the pad token is EOS, padding on the right."""
    tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    return tokenizer
