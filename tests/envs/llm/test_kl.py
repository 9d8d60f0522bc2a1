"""RetrieveLogProb / KLComputation / RetrieveKL / KLRewardTransform with real tiny TransformersWrappers."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict, lazy_stack

pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

from tdrl.data.llm import AdaptiveKLController, History  # noqa: E402
from tdrl.envs import TransformedEnv  # noqa: E402
from tdrl.envs.llm import ChatEnv, KLComputation, KLRewardTransform, RetrieveKL, RetrieveLogProb  # noqa: E402
from tdrl.modules.llm import TransformersWrapper  # noqa: E402
from tests.modules.llm._tiny import teacher_forced, tiny_model  # noqa: E402

from ._tiny import tiny_tokenizer  # noqa: E402  (its chat template marks assistant tokens)

CHATS = [
    [{"role": "user", "content": "what is 2 + 3?"}, {"role": "assistant", "content": "the answer is 5"}],
    [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
]


@pytest.fixture(scope="module")
def models():
    tok = tiny_tokenizer()
    ids = {"vocab_size": len(tok), "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}
    return tok, tiny_model("gpt2", seed=0, **ids), tiny_model("gpt2", seed=1, **ids)


def _rows(td, key):
    value = td.get(key, as_list=True) if hasattr(td, "tensordicts") else td.get(key)
    return list(value) if isinstance(value, list) else list(value.unbind())


def _scorer(model, tok, mode="history", key="log_probs"):
    return TransformersWrapper(model, tokenizer=tok, input_mode=mode, generate=False, return_log_probs=True,
                               pad_output=False, log_probs_key=key)


def _full_td():
    return TensorDict(history=TensorDict(full=History.from_chats(CHATS), batch_size=(2,)), batch_size=(2,))


def test_retrieve_log_prob_matches_teacher_forcing(models):
    tok, gen, _ = models
    t = RetrieveLogProb(_scorer(gen, tok), assistant_only=False)
    lps = _rows(t(_full_td()), ("log_probs", "full"))
    full = History.from_chats(CHATS)
    for i in range(2):
        ids = full[i].apply_chat_template(tokenizer=tok, tokenize=True, add_generation_prompt=False)[0]
        torch.testing.assert_close(lps[i], teacher_forced(gen, ids), atol=1e-5, rtol=0)


def test_assistant_only_zeroes_prompt_tokens(models):
    tok, gen, _ = models
    lp = _rows(RetrieveLogProb(_scorer(gen, tok))(_full_td()), ("log_probs", "full"))
    everything = _rows(RetrieveLogProb(_scorer(gen, tok), assistant_only=False)(_full_td()), ("log_probs", "full"))
    for i in range(2):
        kept = lp[i] != 0
        assert 0 < int(kept.sum()) < lp[i].numel()
        torch.testing.assert_close(lp[i][kept], everything[i][kept])


def test_retrieve_kl_on_data_and_reward(models):
    tok, gen, ref = models
    t = RetrieveKL(_scorer(gen, tok), _scorer(ref, tok, key="ref_log_probs"), coeff=0.5)
    td = _full_td()
    td["next"] = TensorDict(reward=torch.ones(2, 1, 1), batch_size=(2,))
    td = t(td)
    nxt = td["next"]
    gens, refs = _rows(nxt, ("log_probs", "full")), _rows(nxt, ("ref_log_probs", "full"))
    kls, rewards = _rows(nxt, "kl_penalty"), _rows(nxt, "reward")
    for i in range(2):
        torch.testing.assert_close(kls[i], gens[i] - refs[i])
        torch.testing.assert_close(rewards[i].flatten(), 1.0 - 0.5 * (gens[i] - refs[i]))
        assert (gens[i] != refs[i]).any()
    assert rewards[1].shape == (kls[1].numel(), 1)  # per token, ragged


def test_retrieve_kl_in_a_chat_env(models):
    tok, gen, ref = models
    env = TransformedEnv(ChatEnv(batch_size=(2,)), RetrieveKL(_scorer(gen, tok), _scorer(ref, tok, key="ref_log_probs")))
    td = env.reset(TensorDict(query=["what is 2 + 3?", "hello"], batch_size=(2,)))
    replies = lazy_stack([History(role="assistant", content=c).unsqueeze(0) for c in ("the answer is 5", "hi")])
    td["history"].full = td["history"].prompt.extend(replies, inplace=False, dim=-1)
    td = env.step(td)
    assert _rows(td["next"], "kl_penalty")[0].numel() > 0


def test_kl_checks():
    td = TensorDict({"a": torch.zeros(1, 3), "b": torch.zeros(1, 2)}, batch_size=[1])
    with pytest.raises(ValueError, match="shapes"):
        KLComputation("a", "b", add_to_reward=False)(td)
    with pytest.raises(KeyError, match="not found"):
        KLComputation("a", "c", add_to_reward=False)(td)


def test_model_config_errors(models):
    tok, gen, ref = models
    generating = TransformersWrapper(gen, tokenizer=tok, input_mode="history", generate=True)
    with pytest.raises(ValueError, match="generate=False"):
        RetrieveLogProb(generating)
    with pytest.raises(ValueError, match="input_mode='history'"):
        RetrieveLogProb(_scorer(gen, tok, mode="tokens"))
    with pytest.raises(ValueError, match="from_collector"):
        RetrieveKL(ref_model=_scorer(ref, tok))
    padded = TransformersWrapper(ref, tokenizer=tok, input_mode="history", generate=False, return_log_probs=True,
                                 pad_output=True, log_probs_key="ref_log_probs")
    with pytest.raises(ValueError, match="pad_output"):
        RetrieveKL(_scorer(gen, tok), padded)
    with pytest.raises(ValueError, match="exactly one"):
        KLRewardTransform()


def test_kl_reward_transform_and_controller(models):
    tok, gen, ref = models
    full = History.from_chats(CHATS)
    prompts = History.from_chats([c[:1] for c in CHATS])
    ids = [full[i].apply_chat_template(tokenizer=tok, tokenize=True, add_generation_prompt=False)[0] for i in range(2)]
    pids = [prompts[i].apply_chat_template(tokenizer=tok, tokenize=True, add_generation_prompt=True)[0] for i in range(2)]
    td = lazy_stack([
        TensorDict({("tokens", "full"): ids[i], ("tokens", "prompt"): pids[i],
                    ("log_probs", "full"): teacher_forced(gen, ids[i])}) for i in range(2)
    ])
    ref_scorer = _scorer(ref, tok, mode="tokens", key="log_probs")
    t = KLRewardTransform(ref_scorer, coef=0.1)
    out = t(td.set("next", lazy_stack([TensorDict(reward=torch.ones(1, 1)) for _ in range(2)])))
    for i in range(2):
        kl = _rows(out["next"], "kl_penalty")[i].flatten()
        n_prompt = pids[i].numel()
        assert (kl[:n_prompt] == 0).all()
        expected = teacher_forced(gen, ids[i])[n_prompt:] - teacher_forced(ref, ids[i])[n_prompt:]
        torch.testing.assert_close(kl[n_prompt:], expected, atol=1e-5, rtol=0)
        torch.testing.assert_close(_rows(out["next"], "reward")[i].flatten(), 1.0 - 0.1 * kl)
    ctl = AdaptiveKLController(init_kl_coef=0.1, target=0.01, horizon=10, model=t)
    ctl.update([-0.5])
    assert t.kl_coef == pytest.approx(ctl.coef) and ctl.coef > 0.1
