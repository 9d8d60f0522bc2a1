"""The worked example of docs/llm_modules.md, with the numbers the page prints."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict, lazy_stack

transformers = pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

from tdrl.modules.llm import Tokens, TransformersWrapper  # noqa: E402


def test_worked_example() -> None:
    cfg = transformers.GPT2Config(n_layer=1, n_head=1, n_embd=8, vocab_size=8, bos_token_id=7, eos_token_id=7)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    torch.nn.init.zeros_(model.transformer.wte.weight)  # every logit is 0: each token has p = 1/8
    policy = TransformersWrapper(model, input_mode="tokens", generate=False, pad_output=True)
    data = lazy_stack(
        [
            TensorDict(tokens=Tokens(prompt=torch.tensor([3, 4]), full=torch.tensor([3, 4, 6]))),
            TensorDict(tokens=Tokens(prompt=torch.tensor([5]), full=torch.tensor([5, 7, 1, 2]))),
        ]
    )
    out = policy(data)
    u = -math.log(8)  # -2.0794
    assert out["tokens"].full.tolist() == [[0, 3, 4, 6], [5, 7, 1, 2]]
    assert out["masks"].all_attention_mask.tolist() == [[False, True, True, True], [True, True, True, True]]
    torch.testing.assert_close(out["log_probs"].full, torch.tensor([[0, 0, u, u], [0, u, u, u]]))
    torch.testing.assert_close(out["log_probs"].response, torch.tensor([[u, 0, 0], [u, u, u]]))
    torch.testing.assert_close(out["log_probs"].prompt, torch.tensor([[0, u], [0, 0]]))
