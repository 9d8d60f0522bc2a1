"""Conversations rendered by both tdrl and the TorchRL 0.14.1 recorder (``record_torchrl_golden.py``)."""

from __future__ import annotations

TEMPLATE_NAMES = ["chatml_format", "qwen", "dialogpt", "falcon", "deepseek", "llama"]

CONVERSATIONS = {
    "user_only": [{"role": "user", "content": "What is 2 + 3?"}],
    "system_user_assistant": [
        {"role": "system", "content": "Be nice."},
        {"role": "user", "content": "What is 2 + 3?"},
        {"role": "assistant", "content": "The answer is 5."},
    ],
    "multi_turn": [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
        {"role": "user", "content": "How are you?"},
        {"role": "assistant", "content": "I'm doing well, thanks!"},
        {"role": "user", "content": "Bonjour, ça va? 你好"},
    ],
    "tools": [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Add 2 and 3."},
        {
            "role": "assistant",
            "content": "Calling add.",
            "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}],
        },
        {"role": "tool", "content": "5"},
        {"role": "tool", "content": "ok", "tool_responses": ["done"]},
        {"role": "assistant", "content": "It is 5."},
    ],
}

TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {"a": "int", "b": "int"}}}]

# Texts for History.from_text (what a model may generate: truncated endings included).
PARSE_TEXTS = {
    "chatml_format": [
        "<|im_start|>system\nBe nice.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHel",
        "<|im_start|>user\nCall<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n"
        "</tool_call><|im_end|>\n<|im_start|>tool\n<tool_response>\n3\n</tool_response><|im_end|>\n",
        "<|im_start|>user\nA<|im_end|>\n<|im_start|>assistant\nB<|endoftext|>",
    ],
    "qwen": [
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>assistant\n<think>",
    ],
    "llama": [
        "<|header_start|>user<|header_end|>\n\nHi<|eot|><|header_start|>assistant<|header_end|>\n\nHel",
        "<|begin_of_text|><|header_start|>system<|header_end|>\n\nS<|eot|><|header_start|>user<|header_end|>\n\nQ<|eot|>",
    ],
    "falcon": ["User: What is 2 + 3?\n\nAssistant: 5\nUser: thanks\n\nAssistant:"],
    "deepseek": ["<s>User: What is 2 + 3?\n\nAssistant: 5<|im_end|>"],
}

KL_UPDATES = [[-0.5, -0.2, -0.1], [-0.01], [-2.0, -3.0], [0.3]]
