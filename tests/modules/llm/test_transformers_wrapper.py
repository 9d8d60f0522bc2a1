"""TransformersWrapper: the log-prob contract on GPT-2, Llama, Qwen2 and OPT configs (offline, CPU)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict, lazy_stack

pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

from tdrl.modules.llm import Tokens, TransformersWrapper  # noqa: E402
from tests.modules.llm._tiny import ARCHS, bias_token, teacher_forced, tiny_model, tiny_tokenizer  # noqa: E402

PROMPTS = [[5, 6, 7, 8, 9], [10], [11, 12, 13]]
ATOL = 1e-5


@pytest.fixture(scope="module", params=ARCHS)
def arch_model(request: pytest.FixtureRequest):  # noqa: ANN201
    return request.param, tiny_model(request.param)


@pytest.fixture(scope="module")
def tokenizer():  # noqa: ANN201
    return tiny_tokenizer()


def _prompt_td(prompts: list[list[int]] = PROMPTS) -> TensorDict:
    return lazy_stack([TensorDict(tokens=Tokens(prompt=torch.tensor(p))) for p in prompts])


def _gen_kwargs(sampled: bool) -> dict:
    kw = {"max_new_tokens": 5}
    # sampling with processors that change the sampling distribution, not the scores
    kw.update(do_sample=True, temperature=0.7, top_k=20) if sampled else kw.update(do_sample=False)
    return kw


@pytest.mark.parametrize("sampled", [False, True])
@pytest.mark.parametrize("pad_output", [False, True])
def test_generation_matches_teacher_forcing(arch_model, tokenizer, sampled: bool, pad_output: bool) -> None:  # noqa: ANN001
    _, model = arch_model
    torch.manual_seed(1)
    policy = TransformersWrapper(
        model, tokenizer=tokenizer, input_mode="tokens", pad_output=pad_output, generate_kwargs=_gen_kwargs(sampled)
    )
    out = policy(_prompt_td())
    for i, prompt in enumerate(PROMPTS):
        sample = out[i]
        mask = sample["masks"].all_attention_mask.bool()
        full = sample["tokens"].full[mask]
        lp_full = sample["log_probs"].full
        ref = teacher_forced(model, full)
        torch.testing.assert_close(lp_full[mask], ref, atol=ATOL, rtol=0)
        assert (lp_full[~mask] == 0).all() and lp_full[mask][0] == 0
        resp_mask = mask[-sample["tokens"].response.numel() :] if pad_output else None
        resp_lp = sample["log_probs"].response if not pad_output else sample["log_probs"].response[resp_mask]
        n_resp = full.numel() - len(prompt)
        assert resp_lp.numel() == n_resp
        # the first generated token carries its real log-prob (TorchRL 0.14.1 writes 0.0 there)
        torch.testing.assert_close(resp_lp, ref[len(prompt) :], atol=ATOL, rtol=0)
        assert resp_lp[0] != 0


@pytest.mark.parametrize("pad_output", [False, True])
def test_packed_scoring_equals_padded(arch_model, tokenizer, pad_output: bool) -> None:  # noqa: ANN001
    _, model = arch_model
    seqs = [torch.randint(2, 300, (n,)) for n in (7, 2, 11, 1, 5)]
    td = lazy_stack([TensorDict(tokens=Tokens(full=s)) for s in seqs])
    kwargs = {"tokenizer": tokenizer, "input_mode": "tokens", "generate": False, "pad_output": pad_output}
    packed = TransformersWrapper(model, pad_model_input=False, **kwargs)(td.copy())
    padded = TransformersWrapper(model, pad_model_input=True, **kwargs)(td.copy())
    a = packed.get(("log_probs", "full"), as_padded_tensor=True)
    b = padded.get(("log_probs", "full"), as_padded_tensor=True)
    torch.testing.assert_close(a, b, atol=ATOL, rtol=0)
    for i, s in enumerate(seqs):
        lp = packed.get(("log_probs", "full"), as_list=True)[i] if not pad_output else None
        if lp is not None:
            assert lp.numel() == s.numel()
            torch.testing.assert_close(lp, teacher_forced(model, s), atol=ATOL, rtol=0)
    # every sequence's first token is exactly 0 in both layouts (no cross-sequence leak in packs)
    starts = [int(a.shape[-1] - s.numel()) if pad_output else 0 for s in seqs]
    assert all(a[i, k] == 0 and b[i, k] == 0 for i, k in enumerate(starts))


def test_pad_id_equal_to_eos_keeps_eos(arch_model) -> None:  # noqa: ANN001
    arch, _ = arch_model
    tok = tiny_tokenizer(pad_is_eos=True)
    eos = tok.eos_token_id
    assert tok.pad_token_id == eos
    model = tiny_model(arch, eos_token_id=eos, pad_token_id=eos)
    bias_token(model, eos, 3.0)
    torch.manual_seed(0)
    policy = TransformersWrapper(
        model, tokenizer=tok, input_mode="tokens", pad_output=True,
        generate_kwargs={"max_new_tokens": 6, "do_sample": True},
    )
    out = policy(_prompt_td([[5, 6], [7], [8, 9, 10], [11], [12, 13], [14]]))
    mask = out["masks"].all_attention_mask
    full = out["tokens"].full
    ended = (full == eos) & mask
    assert ended.any(), "the EOS-biased model must emit EOS"
    # a real EOS token is kept (mask true) and scored with a non-zero log-prob; pads (same id) are 0.0
    assert (out["log_probs"].full[ended] != 0).all()
    assert (out["log_probs"].full[~mask] == 0).all()
    lengths = out["masks"].all_assistant_mask.sum(-1)
    assert len(set(lengths.tolist())) > 1, "sampled responses should have different lengths"
    for i in range(full.shape[0]):
        ref = teacher_forced(model, full[i][mask[i]])
        torch.testing.assert_close(out["log_probs"].full[i][mask[i]], ref, atol=ATOL, rtol=0)
    # scoring the padded batch again (mask-driven) gives the same numbers, EOS included
    scorer = policy.get_new_version(generate=False, pad_model_input=False)
    rescored = scorer(out.copy())["log_probs"].full
    torch.testing.assert_close(rescored, out["log_probs"].full, atol=ATOL, rtol=0)


def test_ragged_response_lengths(tokenizer) -> None:  # noqa: ANN001
    model = tiny_model("llama")
    bias_token(model, tokenizer.eos_token_id, 3.0)
    torch.manual_seed(3)
    policy = TransformersWrapper(
        model, tokenizer=tokenizer, input_mode="tokens", generate_kwargs={"max_new_tokens": 6, "do_sample": True},
        num_samples=3,
    )
    out = policy(_prompt_td())
    assert out.batch_size == (3, 3)
    tokens = out.get(("tokens", "response"), as_list=True)
    lps = out.get(("log_probs", "response"), as_list=True)
    lens = []
    for row_t, row_lp in zip(tokens, lps):
        for t, lp in zip(row_t, row_lp):
            assert lp.shape == t.shape
            ends = (t == tokenizer.eos_token_id).nonzero()
            assert ends.numel() == 0 or ends[0].item() == t.numel() - 1  # nothing after the first EOS
            lens.append(t.numel())
    assert len(set(lens)) > 1


def test_get_dist_matches_log_probs(tokenizer) -> None:  # noqa: ANN001
    model = tiny_model("qwen2")
    policy = TransformersWrapper(model, tokenizer=tokenizer, input_mode="tokens", generate_kwargs={"max_new_tokens": 3})
    data = policy(_prompt_td())
    scorer = policy.get_new_version(generate=False)
    action = data.get(("tokens", "full"), as_padded_tensor=True, padding_side="left", padding_value=-100)
    stored = data.get(("log_probs", "full"), as_padded_tensor=True, padding_side="left", padding_value=0.0)
    generic = scorer._get_generic_dist(data)
    torch.testing.assert_close(generic.log_prob(action), stored, atol=ATOL, rtol=0)
    sft = scorer._get_sft_dist(data)
    lp = sft.log_prob(action)
    prompt_len = torch.tensor([len(p) for p in PROMPTS])
    width = action.shape[-1]
    full_len = torch.tensor([t.numel() for t in data.get(("tokens", "full"), as_list=True)])
    is_response = torch.arange(width) >= (width - full_len + prompt_len)[:, None]
    assert (lp[~is_response] == 0).all()
    torch.testing.assert_close(lp[is_response], stored[is_response], atol=ATOL, rtol=0)
    lp.sum().backward()
    assert next(model.parameters()).grad is not None
    with pytest.raises(RuntimeError, match="generate=False"):
        policy.get_dist(data)


def test_text_mode_generate_and_score(tokenizer) -> None:  # noqa: ANN001
    model = tiny_model("gpt2")
    policy = TransformersWrapper(model, tokenizer=tokenizer, input_mode="text", generate_kwargs={"max_new_tokens": 4})
    td = TensorDict(text=TensorDict(prompt=["hello world", "what is 2 + 3?"], batch_size=[2]), batch_size=[2])
    out = policy(td)
    assert out["text"][1].prompt == "what is 2 + 3?"
    assert out["text"][1].full == out["text"][1].prompt + out["text"][1].response
    assert set(out.keys()) >= {"text", "tokens", "masks", "log_probs"}
    scorer = policy.get_new_version(generate=False, prefer_tokens=True)
    rescored = scorer(out.copy())
    for a, b in zip(rescored.get(("log_probs", "full"), as_list=True), out.get(("log_probs", "full"), as_list=True)):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)


def test_inplace_and_keys(tokenizer) -> None:  # noqa: ANN001
    model = tiny_model("opt")
    td = _prompt_td()
    td.set("other", torch.zeros(3))
    kw = {"tokenizer": tokenizer, "input_mode": "tokens", "generate_kwargs": {"max_new_tokens": 2}}
    out = TransformersWrapper(model, **kw)(td)
    assert out is td and "other" in out.keys()
    fresh = TransformersWrapper(model, inplace=False, **kw)(_prompt_td())
    assert set(fresh.keys()) == {"tokens", "masks", "log_probs"}
    empty = TransformersWrapper(model, inplace="empty", return_log_probs=False, **kw)(td.copy())
    assert "other" not in empty.keys() and "log_probs" not in empty.keys()
    policy = TransformersWrapper(model, log_probs_key="lp", tokens_key="tk", masks_key="mk", **kw)
    assert policy.in_keys == [("tokens", "prompt")]
    assert policy.out_keys == ["mk", "tk", "lp"]
    one = policy(TensorDict(tokens=Tokens(prompt=torch.tensor([4, 5]))))
    assert one.batch_size == () and one["lp"].response.shape == (2,)


def test_constructor_errors(tokenizer) -> None:  # noqa: ANN001
    model = tiny_model("gpt2")
    with pytest.raises(ValueError, match="input_mode"):
        TransformersWrapper(model, tokenizer=tokenizer, input_mode="image")
    with pytest.raises(ValueError, match="pad_model_input"):
        TransformersWrapper(model, tokenizer=tokenizer, generate=True, pad_model_input=False)
    with pytest.raises(ValueError, match="return_log_probs"):
        TransformersWrapper(model, tokenizer=tokenizer, generate=False, return_log_probs=False)
    with pytest.raises(ValueError, match="inplace"):
        TransformersWrapper(model, tokenizer=tokenizer, num_samples=2, inplace=True)
    with pytest.raises(ValueError, match="top_k"):
        TransformersWrapper(model, tokenizer=tokenizer, generate_kwargs={"top_k": 0})
    with pytest.raises(ValueError, match="tokenizer"):
        TransformersWrapper(model, input_mode="text")
    with pytest.raises(OSError, match="HF_HUB_OFFLINE"):
        TransformersWrapper("no-such-org/no-such-model-xyz")


def test_import_does_not_load_transformers() -> None:
    import subprocess
    import sys

    code = "import sys, tdrl, tdrl.modules, tdrl.modules.llm; print('transformers' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "False"


def test_padded_samples_and_batch_dims(tokenizer) -> None:  # noqa: ANN001
    model = tiny_model("gpt2")
    policy = TransformersWrapper(
        model, tokenizer=tokenizer, input_mode="tokens", pad_output=True, num_samples=2,
        generate_kwargs={"max_new_tokens": 3, "do_sample": True},
    )
    out = policy(_prompt_td())
    assert out.batch_size == (3, 2)
    assert out["tokens"].full.shape[:2] == (3, 2) and out["log_probs"].full.shape == out["tokens"].full.shape
    for b in range(3):
        for k in range(2):
            mask = out["masks"].all_attention_mask[b, k]
            full = out["tokens"].full[b, k][mask]
            assert full[: len(PROMPTS[b])].tolist() == PROMPTS[b]
            torch.testing.assert_close(out["log_probs"].full[b, k][mask], teacher_forced(model, full), atol=ATOL, rtol=0)
    # a [2, 2] batch of prompts is flattened and reshaped back
    grid = TensorDict(tokens=Tokens(prompt=torch.tensor([[[4, 5], [6, 7]], [[8, 9], [10, 11]]]), batch_size=[2, 2]), batch_size=[2, 2])
    scorer = TransformersWrapper(model, tokenizer=tokenizer, input_mode="tokens", generate=False, pad_output=True,
                                 input_key=("tokens", "prompt"))
    res = scorer(grid)
    assert res["log_probs"].full.shape == (2, 2, 2)
    torch.testing.assert_close(res["log_probs"].full[1, 0], teacher_forced(model, torch.tensor([8, 9])), atol=ATOL, rtol=0)
