"""The generation prefill: prompt log-probs from a head-only projection of real positions, the cache repeated
for several samples, and the fall-back to the full forward for models whose logits are not ``head(base(x))``."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict, lazy_stack

pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

from tdrl.modules.llm import Tokens, TransformersWrapper  # noqa: E402
from tdrl.modules.llm.policies import _prefill  # noqa: E402
from tests.modules.llm._tiny import teacher_forced, tiny_model, tiny_tokenizer  # noqa: E402

PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [12], [13, 14, 15]]


def _prompts() -> TensorDict:
    return lazy_stack([TensorDict(tokens=Tokens(prompt=torch.tensor(p))) for p in PROMPTS])


def _check_against_teacher_forcing(model, out: TensorDict) -> None:  # noqa: ANN001
    for idx in range(out.numel()):
        sample = out.reshape(-1)[idx]
        full, lp = sample["tokens"].full, sample["log_probs"].full
        torch.testing.assert_close(lp, teacher_forced(model, full), atol=1e-5, rtol=0)


def test_samples_share_one_prefill_per_prompt() -> None:
    model = tiny_model("llama")
    policy = TransformersWrapper(
        model, tokenizer=tiny_tokenizer(), input_mode="tokens", num_samples=3,
        generate_kwargs={"max_new_tokens": 4, "do_sample": True, "temperature": 1.3},
    )
    torch.manual_seed(0)
    out = policy(_prompts())
    assert out.batch_size == torch.Size([3, 3])
    _check_against_teacher_forcing(model, out)
    # the samples of one prompt differ (sampling) but share the prompt's log-probs
    for b, p in enumerate(PROMPTS):
        lps = [out[b, s]["log_probs"].full[: len(p)] for s in range(3)]
        assert all(torch.equal(lps[0], x) for x in lps[1:])


class _SoftCapped(torch.nn.Module):
    """A causal LM whose logits are ``10 * tanh(head(h) / 10)``: not ``head(base(x))``, so no split."""

    def __init__(self, inner) -> None:  # noqa: ANN001
        super().__init__()
        self.inner = inner

    def __getattr__(self, name: str):  # noqa: ANN204
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.inner, name)

    def forward(self, **kwargs):  # noqa: ANN003, ANN201
        out = self.inner(**kwargs)
        out.logits = 10 * torch.tanh(out.logits / 10)
        return out


def test_split_is_checked_and_refused_for_post_processed_logits() -> None:
    inner = tiny_model("gpt2")
    capped = _SoftCapped(inner)
    probe = torch.tensor([[5, 6, 7]])
    assert _prefill.split_model(inner, probe) is not None
    assert _prefill.split_model(capped, probe) is None
    ids = torch.tensor([[0, 0, 5, 6, 7], [8, 9, 10, 11, 12]])
    attn = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    prompts = [torch.tensor([5, 6, 7]), torch.tensor([8, 9, 10, 11, 12])]
    for model in (inner, capped):
        lps, cache = _prefill.prefill_prompts(model, prompts, ids, attn, n=2)
        for p, lp in zip(prompts, lps):
            # the pass over all but the last prompt token scores every prompt token
            torch.testing.assert_close(lp, teacher_forced(model, p), atol=1e-5, rtol=0)
        # the cache holds the first L - 1 positions, each prompt's row twice (grouped)
        assert cache.get_seq_length() == 4 and cache.layers[0].keys.shape[0] == 4


def test_gathered_log_probs_matches_log_softmax() -> None:
    logits = torch.randn(3, 5, 11)
    ids = torch.randint(0, 11, (3, 5))
    ref = torch.log_softmax(logits, -1).gather(-1, ids[..., None])[..., 0]
    torch.testing.assert_close(_prefill.gathered_log_probs(logits, ids), ref)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_one_sample_reads_prompt_log_probs_from_generates_own_prefill(arch: str) -> None:
    model = tiny_model(arch)
    kw = {"max_new_tokens": 4, "do_sample": False}
    policies = {
        lp: TransformersWrapper(
            model, tokenizer=tiny_tokenizer(), input_mode="tokens", return_log_probs=lp, generate_kwargs=kw
        )
        for lp in (True, False)
    }
    policies[True](_prompts())  # the one-off check that head(base(x)) is the model's logits
    calls: dict[bool, int] = {}
    for lp, policy in policies.items():
        seen = []
        handle = model.base_model.register_forward_hook(lambda m, a, o, seen=seen: seen.append(1))
        try:
            out = policy(_prompts())
        finally:
            handle.remove()
        calls[lp] = len(seen)
    # as many base-model calls as plain generation: the prompt was not run a second time for its log-probs
    assert calls[True] == calls[False] > 0
    out = policies[True](_prompts())
    _check_against_teacher_forcing(model, out)
    for b, p in enumerate(PROMPTS):
        assert out[b]["log_probs"].prompt.numel() == len(p)


def test_capture_refuses_a_partial_prefill() -> None:
    model = tiny_model("llama")
    ids = torch.tensor([[0, 5, 6, 7], [8, 9, 10, 11]])
    attn = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1]])
    capture = _prefill.PrefillCapture(_prefill.split_model(model, ids[:1, 1:]))
    with torch.no_grad():
        model(input_ids=ids[:, :2], attention_mask=attn[:, :2])  # a chunk only
    assert capture.log_probs(ids, attn) is None
    capture = _prefill.PrefillCapture(_prefill.split_model(model, ids[:1, 1:]))
    with torch.no_grad():
        model(input_ids=ids, attention_mask=attn, position_ids=(attn.cumsum(-1) - 1).clamp(min=0))
    lps = capture.log_probs(ids, attn)
    assert [lp.numel() for lp in lps] == [3, 4]
    torch.testing.assert_close(lps[1], teacher_forced(model, ids[1]), atol=1e-5, rtol=0)
