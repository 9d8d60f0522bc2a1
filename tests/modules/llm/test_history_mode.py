"""History mode and a TorchRL 0.14.1-style program run after the torchrl -> tdrl import swap."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

from tdrl.data.llm import History  # noqa: E402
from tdrl.modules.llm import ChatHistory, TransformersWrapper  # noqa: E402
from tests.modules.llm._tiny import bias_token, teacher_forced, tiny_model, tiny_tokenizer  # noqa: E402

# The same calls as TorchRL's TransformersWrapper documentation (checked by hand to run on TorchRL 0.14.1
# in the anchor venv, where get_dist itself raises; the program therefore uses _get_sft_dist as GRPOLoss does).
TORCHRL_PROGRAM = '''
import torch
from tensordict import TensorDict

from torchrl.data.llm import History
from torchrl.modules.llm import TransformersWrapper
from torchrl.modules.llm.policies import ChatHistory

wrapper = TransformersWrapper(
    model, tokenizer=tokenizer, input_mode="history", generate=True, return_log_probs=True,
    pad_output=False, generate_kwargs={"max_new_tokens": 5},
)
history = History.from_chats([[
    {"role": "system", "content": "be short"},
    {"role": "user", "content": "what is 2 + 3?"},
]])
chat_history = ChatHistory(prompt=history)
result = wrapper(TensorDict(history=chat_history, batch_size=(1,)))
response_text = result["text"].response
response_lp = result["log_probs"].response
role = result["history"].response[0].role
scorer = wrapper.get_new_version(generate=False, input_mode="tokens", input_key=("tokens", "full"))
scored = scorer(result.copy())
full_lp = scored.get(("log_probs", "full"), as_list=True)
dist = scorer._get_sft_dist(result.copy())
action = result.get(("tokens", "full"), as_padded_tensor=True, padding_side="left", padding_value=-100)
sft_lp = dist.log_prob(action)
'''


def test_torchrl_style_program_runs_after_import_swap() -> None:
    scope = {"model": tiny_model("qwen2"), "tokenizer": tiny_tokenizer()}
    exec(compile(TORCHRL_PROGRAM.replace("torchrl", "tdrl"), "torchrl_program", "exec"), scope)  # noqa: S102
    response_lp, full_lp, sft_lp = scope["response_lp"], scope["full_lp"], scope["sft_lp"]
    assert list(scope["role"]) == ["assistant"]
    assert isinstance(full_lp, list) and len(full_lp) == 1
    n = response_lp.shape[-1]
    # the response is the tail of the scored full sequence, first generated token included (not 0.0)
    torch.testing.assert_close(full_lp[0][-n:].detach(), response_lp.reshape(-1), atol=1e-5, rtol=0)
    assert response_lp.reshape(-1)[0] != 0
    assert (sft_lp[0, :-n] == 0).all() and torch.allclose(sft_lp[0, -n:].detach(), response_lp.reshape(-1), atol=1e-5)


@pytest.fixture(scope="module")
def chat():  # noqa: ANN201
    tok = tiny_tokenizer()
    model = tiny_model("gpt2")
    end = tok.convert_tokens_to_ids("<|im_end|>")
    bias_token(model, end, 4.0)
    return tok, model, end


def _histories() -> History:
    return History.from_chats(
        [
            [{"role": "user", "content": "hello"}],
            [{"role": "system", "content": "be short"}, {"role": "user", "content": "what is 7 + 1?"}],
        ]
    )


@pytest.mark.parametrize("pad_output", [False, True])
def test_history_generation(chat, pad_output: bool) -> None:  # noqa: ANN001
    tok, model, end = chat
    torch.manual_seed(0)
    policy = TransformersWrapper(
        model, tokenizer=tok, input_mode="history", pad_output=pad_output, chat_template_name="chatml_format",
        generate_kwargs={"max_new_tokens": 6, "do_sample": True, "eos_token_id": end},
    )
    out = policy(TensorDict(history=ChatHistory(prompt=_histories(), batch_size=[2]), batch_size=[2]))
    assert set(out.keys()) == {"history", "text", "tokens", "masks", "log_probs"}
    for i, n_prompt in enumerate((1, 2)):
        h = out["history"][i]
        assert h.full.batch_size[-1] == n_prompt + 1 and list(h.response.role) == ["assistant"]
        text = out["text"][i]
        assert text.prompt.endswith("<|im_start|>assistant\n") and text.full == text.prompt + text.response
        mask = out["masks"][i].all_attention_mask.bool()
        full = out["tokens"][i].full[mask]
        torch.testing.assert_close(out["log_probs"][i].full[mask], teacher_forced(model, full), atol=1e-5, rtol=0)


def test_history_scoring_masks(chat) -> None:  # noqa: ANN001
    tok, model, end = chat
    gen = TransformersWrapper(
        model, tokenizer=tok, input_mode="history", chat_template_name="chatml_format",
        generate_kwargs={"max_new_tokens": 4, "eos_token_id": end},
    )
    data = gen(TensorDict(history=ChatHistory(prompt=_histories(), batch_size=[2]), batch_size=[2]))
    scorer = gen.get_new_version(generate=False)
    assert scorer.in_keys == [("history", "full")]
    scored = scorer(data.copy())
    seqs = scored.get(("tokens", "full"), as_list=True)
    for seq, lp in zip(seqs, scored.get(("log_probs", "full"), as_list=True)):
        torch.testing.assert_close(lp.detach(), teacher_forced(model, seq), atol=1e-5, rtol=0)
    # sft: only what follows each prompt (with its generation header) counts
    sft = scorer._get_sft_dist(data.copy())
    prompt_len = [len(t) for t in gen._encode(gen._apply_template(_histories(), add_generation_prompt=True))]
    counted = sft.mask.sum(-1).tolist()
    assert counted == [len(s) - n for s, n in zip(seqs, prompt_len)]


def test_container_conversions() -> None:
    tok = tiny_tokenizer()
    chat = ChatHistory(prompt=_histories(), batch_size=[2])
    text = chat.to_text(tok, chat_template_name="chatml_format")
    assert text[1].prompt.startswith("<|im_start|>system\nbe short<|im_end|>")
    tokens = text.to_tokens(tok)
    assert tok.decode(tokens[1].prompt.tolist()) == text[1].prompt
    back = tokens.to_history(tok, chat_template_name="chatml_format")
    assert list(back[1].prompt.content)[:2] == ["be short", "what is 7 + 1?"]
    spec = ChatHistory.default_spec(shape=(2, -1))
    assert spec.shape == (2,) and spec.data_cls is ChatHistory
