"""The tiny GPT-2 trunk and the chosen / rejected batch shared by the TorchRL recorder and the tdrl test."""

from __future__ import annotations

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PAD = 0
CHOSEN = torch.tensor([[5, 6, 7, 8, 0, 0], [5, 9, 9, 0, 0, 0], [4, 4, 4, 4, 4, 4]])
REJECTED = torch.tensor([[5, 6, 3, 0, 0, 0], [5, 9, 9, 0, 0, 0], [4, 4, 2, 2, 2, 0]])


def save_tiny_gpt2(path) -> None:
    """A seeded, random-weight 1-layer GPT-2 (vocab 12) written with ``save_pretrained``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=12, n_positions=8, eos_token_id=1,
                        bos_token_id=1)
    GPT2LMHeadModel(config).save_pretrained(path)
