"""LLM policy benchmarks: tokens/s of teacher-forced scoring (packed vs padded) and of generation.

The same file runs on tdrl (``--backend tdrl``) and on TorchRL 0.14.1 (``--backend torchrl``, from the anchor
venv). Models are random-weight configs (2 layers, hidden 64, vocabulary 4096) and the tokenizer is trained
in-process, so nothing is downloaded. Each benchmark stores its tokens/s in ``extra_info["tokens_per_s"]``.

TorchRL 0.14.1 cannot score GPT-2 (its padded path passes the mask positionally into GPT-2's cache argument,
its packed path builds float position ids); those cases are skipped on TorchRL with that reason.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch
from _backend import BACKEND, sub
from tensordict import TensorDict, lazy_stack

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared tiny builders live under tests/
from tests.modules.llm._tiny import tiny_tokenizer  # noqa: E402

llm = sub("modules.llm")

VOCAB = 4096
# a ragged batch: 16 sequences of 8..128 tokens (mean ~68)
LENGTHS = [8, 128, 24, 96, 40, 112, 16, 72, 56, 120, 32, 88, 64, 104, 48, 80]


def _model(arch: str):  # noqa: ANN202
    import transformers as tf

    torch.manual_seed(0)
    if arch == "gpt2":
        cfg = tf.GPT2Config(n_layer=2, n_head=4, n_embd=64, n_positions=256, vocab_size=VOCAB)
        return tf.GPT2LMHeadModel(cfg).eval()
    cfg = tf.LlamaConfig(
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=64, intermediate_size=128,
        max_position_embeddings=256, vocab_size=VOCAB,
    )
    return tf.LlamaForCausalLM(cfg).eval()


def _ragged_batch() -> TensorDict:
    g = torch.Generator().manual_seed(0)
    seqs = [torch.randint(4, VOCAB, (n,), generator=g) for n in LENGTHS]
    return lazy_stack([TensorDict(tokens=llm.Tokens(full=s)) for s in seqs])


def _skip_torchrl_gpt2(arch: str) -> None:
    if BACKEND == "torchrl" and arch == "gpt2":
        pytest.skip("TorchRL 0.14.1 cannot score GPT-2 (positional mask -> cache; float packed position ids)")


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_llm_score(benchmark, arch: str, packed: bool) -> None:
    _skip_torchrl_gpt2(arch)
    policy = llm.TransformersWrapper(
        _model(arch), tokenizer=tiny_tokenizer(), input_mode="tokens", generate=False, pad_model_input=not packed
    )
    data = _ragged_batch()
    with torch.no_grad():
        policy(data.copy())  # warm-up
        benchmark.pedantic(lambda: policy(data.copy()), rounds=10, warmup_rounds=1)
    benchmark.extra_info["tokens_per_s"] = sum(LENGTHS) / benchmark.stats.stats.mean


@pytest.mark.parametrize("arch", ["llama"])
@pytest.mark.parametrize("return_log_probs", [False, True], ids=["no_lp", "lp"])
def test_llm_generate(benchmark, arch: str, return_log_probs: bool) -> None:
    # with log-probs, tdrl also scores the prompts (log_probs.prompt / full); TorchRL 0.14.1 only the response
    new_tokens = 16
    policy = llm.TransformersWrapper(
        _model(arch), tokenizer=tiny_tokenizer(), input_mode="tokens", generate=True, return_log_probs=return_log_probs,
        generate_kwargs={"max_new_tokens": new_tokens, "do_sample": False, "eos_token_id": -1},
    )
    g = torch.Generator().manual_seed(0)
    prompts = lazy_stack([TensorDict(tokens=llm.Tokens(prompt=torch.randint(4, 300, (n,), generator=g))) for n in LENGTHS[:8]])
    policy(prompts.copy())
    benchmark.pedantic(lambda: policy(prompts.copy()), rounds=5, warmup_rounds=1)
    benchmark.extra_info["tokens_per_s"] = 8 * new_tokens / benchmark.stats.stats.mean
