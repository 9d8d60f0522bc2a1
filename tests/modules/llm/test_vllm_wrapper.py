"""vLLMWrapper against a CPU stand-in engine shaped like vLLM (vllm itself is not installed here)."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from tensordict import TensorDict, lazy_stack

pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

from tdrl.modules.llm import Tokens, TransformersWrapper, vLLMWrapper  # noqa: E402
from tests.modules.llm._fake_vllm import FakeLLM  # noqa: E402
from tests.modules.llm._tiny import bias_token, teacher_forced, tiny_model, tiny_tokenizer  # noqa: E402

PROMPTS = [[5, 6, 7, 8], [9], [10, 11]]
ATOL = 1e-5


@pytest.fixture(scope="module")
def setup():  # noqa: ANN201
    tok = tiny_tokenizer()
    model = tiny_model("llama")
    bias_token(model, tok.eos_token_id, 2.5)
    return tok, model


def _prompts() -> TensorDict:
    return lazy_stack([TensorDict(tokens=Tokens(prompt=torch.tensor(p))) for p in PROMPTS])


@pytest.mark.parametrize("pad_output", [False, True])
@pytest.mark.parametrize("sampled", [False, True])
def test_generation_log_probs_match_teacher_forcing(setup, pad_output: bool, sampled: bool) -> None:  # noqa: ANN001
    tok, model = setup
    torch.manual_seed(0)
    kwargs = {"max_tokens": 6, "temperature": 0.8, "top_k": 10} if sampled else {"max_tokens": 6, "temperature": 0.0}
    policy = vLLMWrapper(FakeLLM(model, tok), input_mode="tokens", pad_output=pad_output, generate_kwargs=kwargs)
    out = policy(_prompts())
    for i, prompt in enumerate(PROMPTS):
        s = out[i]
        mask = s["masks"].all_attention_mask.bool()
        full = s["tokens"].full[mask]
        ref = teacher_forced(model, full)
        torch.testing.assert_close(s["log_probs"].full[mask], ref, atol=ATOL, rtol=0)
        # vLLM's None first prompt log-prob is the contract's 0.0; pads are 0.0
        assert s["log_probs"].full[mask][0] == 0 and (s["log_probs"].full[~mask] == 0).all()
        resp = s["log_probs"].response
        resp = resp[mask[-resp.numel() :]] if pad_output else resp
        assert resp.numel() == full.numel() - len(prompt) and resp[0] != 0
    if not pad_output:
        lps = out.get(("log_probs", "response"), as_list=True)
        toks = out.get(("tokens", "response"), as_list=True)
        assert [lp.shape for lp in lps] == [t.shape for t in toks]


def test_text_input_ragged_lists(setup) -> None:  # noqa: ANN001
    tok, model = setup
    engine = FakeLLM(model, tok)
    policy = vLLMWrapper(engine, input_mode="text", generate_kwargs={"max_new_tokens": 4, "n": 2})
    td = TensorDict(text=TensorDict(prompt=["hello world", "what is 7 + 1?"], batch_size=[2]), batch_size=[2])
    out = policy(td)
    assert out.batch_size == (2, 2)
    assert engine.calls[-1].n == 2 and engine.calls[-1].max_tokens == 4 and engine.calls[-1].logprobs == 1
    responses = out.get(("tokens", "response"), as_list=True)
    assert isinstance(responses, list) and all(isinstance(t, torch.Tensor) for row in responses for t in row)
    assert out["text"][1, 0].full == out["text"][1, 0].prompt + out["text"][1, 0].response


def test_scoring_equals_transformers(setup) -> None:  # noqa: ANN001
    tok, model = setup
    seqs = [torch.randint(4, 300, (n,)) for n in (6, 1, 3)]
    td = lazy_stack([TensorDict(tokens=Tokens(full=s)) for s in seqs])
    engine = FakeLLM(model, tok)
    scored = vLLMWrapper(engine, input_mode="tokens", generate=False)(td.copy())
    ref = TransformersWrapper(model, tokenizer=tok, input_mode="tokens", generate=False)(td.copy())
    assert engine.calls[-1].max_tokens == 1 and engine.calls[-1].prompt_logprobs == 1
    for a, b in zip(scored.get(("log_probs", "full"), as_list=True), ref.get(("log_probs", "full"), as_list=True)):
        torch.testing.assert_close(a, b.detach(), atol=ATOL, rtol=0)
    with pytest.raises(RuntimeError, match="no logits"):
        vLLMWrapper(engine, input_mode="tokens", generate=False).get_dist(td.copy())


def test_missing_prompt_logprobs(setup) -> None:  # noqa: ANN001
    tok, model = setup
    engine = FakeLLM(model, tok, omit_prompt_logprobs=True)
    policy = vLLMWrapper(engine, input_mode="tokens", generate_kwargs={"max_tokens": 3, "temperature": 0.0})
    with pytest.warns(UserWarning, match="prompt_logprobs"):
        out = policy(_prompts())
    assert out["log_probs"][0].full is None and out["log_probs"][0].response.numel() > 0
    with pytest.raises(RuntimeError, match="prompt_logprobs"):
        vLLMWrapper(engine, input_mode="tokens", generate=False)(_prompts().rename_key_(("tokens", "prompt"), ("tokens", "full")))


def test_update_weights_pushes_trainer_weights(setup) -> None:  # noqa: ANN001
    tok, _ = setup
    engine_model, trainer = tiny_model("gpt2", seed=1), tiny_model("gpt2", seed=2)
    engine = FakeLLM(engine_model, tok)
    policy = vLLMWrapper(engine, input_mode="tokens", generate=False)
    td = lazy_stack([TensorDict(tokens=Tokens(full=torch.tensor([4, 5, 6, 7])))])
    before = policy(td.copy())["log_probs"][0].full
    policy.update_weights(trainer.state_dict())
    after = policy(td.copy())["log_probs"][0].full
    torch.testing.assert_close(after, teacher_forced(trainer, torch.tensor([4, 5, 6, 7])), atol=ATOL, rtol=0)
    assert not torch.allclose(before, after) and engine.prefix_resets == 1


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_model_name_without_vllm_names_the_extra() -> None:
    with pytest.raises(ImportError, match=r"tdrl\[vllm\]"):
        vLLMWrapper("Qwen/Qwen2.5-0.5B", input_mode="tokens")
    with pytest.raises(TypeError, match="generate"):
        vLLMWrapper(object(), input_mode="tokens")
