"""LLMEnv (text-to-text with a Tokenizer, token mode, EOS done) and the Tokenizer transform."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.envs.llm import LLMEnv, Tokenizer

pytestmark = pytest.mark.filterwarnings("ignore:LLMEnv is deprecated:DeprecationWarning")


def _loader():
    return [{"text": ["What is 2 + 3?", "Hello"]}, {"text": ["Bonjour", "7 + 1"]}]


def test_str2str_tokenizes_observation_and_action_every_step(tokenizer):
    env = LLMEnv.from_dataloader(_loader(), tokenizer=tokenizer, batch_size=2, eos_token_id=tokenizer.eos_token_id)
    td = env.reset()
    assert list(td["text"]) == ["What is 2 + 3?", "Hello"]
    expected = tokenizer(["What is 2 + 3?", "Hello"], padding=True, return_tensors="pt", add_special_tokens=False)
    assert torch.equal(td["tokens"], expected["input_ids"]) and torch.equal(td["attention_mask"], expected["attention_mask"])
    # The policy writes tokens; the inverse decodes them into the text action the base env appends.
    reply = tokenizer([" 5", " there"], padding=True, return_tensors="pt", add_special_tokens=False)
    td["tokens_response"] = reply["input_ids"]
    td["attention_mask_response"] = reply["attention_mask"]
    td = env.step(td)
    nxt = td["next"]
    assert list(nxt["text"]) == ["What is 2 + 3? 5", "Hello there"]
    again = tokenizer(list(nxt["text"]), padding=True, return_tensors="pt", add_special_tokens=False)
    assert torch.equal(nxt["tokens"], again["input_ids"]) and torch.equal(nxt["attention_mask"], again["attention_mask"])
    assert not nxt["done"].any()


def test_eos_in_the_token_action_ends_the_episode(tokenizer):
    env = LLMEnv.from_dataloader(_loader(), tokenizer=tokenizer, batch_size=2, eos_token_id=tokenizer.eos_token_id)
    td = env.reset()
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    td["tokens_response"] = torch.tensor([[50, eos], [pad, 51]])
    td = env.step(td)
    assert td["next", "done"].flatten().tolist() == [True, False]


def test_token_mode_appends_and_extends_the_mask():
    env = LLMEnv(from_text=False, batch_size=(2,), eos_token_id=9)
    obs = TensorDict(tokens=torch.tensor([[1, 2], [3, 4]]), attention_mask=torch.tensor([[0, 1], [1, 1]]), batch_size=(2,))
    td = env.reset(obs)
    td["tokens_response"] = torch.tensor([[5], [9]])
    nxt = env.step(td)["next"]
    assert nxt["tokens"].tolist() == [[1, 2, 5], [3, 4, 9]]
    assert nxt["attention_mask"].tolist() == [[0, 1, 1], [1, 1, 1]]
    assert nxt["done"].flatten().tolist() == [False, True]


def test_assign_reward_and_done_per_token():
    env = LLMEnv(from_text=False, batch_size=(1,), assign_reward=True, assign_done=True, eos_token_id=9)
    td = env.reset(TensorDict(tokens=torch.tensor([[1]]), attention_mask=torch.ones(1, 1, dtype=torch.long), batch_size=(1,)))
    td["tokens_response"] = torch.tensor([[4, 9, 4]])
    nxt = env.step(td)["next"]
    assert nxt["reward"].shape == (1, 3, 1)
    assert nxt["tokens_data", "done"].tolist() == [[False, True, False]] and nxt["done"].item()


def test_llm_env_errors(tokenizer):
    with pytest.raises(ValueError, match="token actions"):
        LLMEnv(assign_reward=True)
    with pytest.raises(TypeError, match="0-d or 1-d"):
        LLMEnv(batch_size=(1, 2))
    with pytest.raises(ValueError, match="attention key"):
        LLMEnv.from_dataloader(_loader(), tokenizer=tokenizer, attention_key="mask", batch_size=2)
    with pytest.raises(RuntimeError, match="from_text=True"):
        LLMEnv.from_dataloader(_loader(), tokenizer=tokenizer, from_text=False, batch_size=2)
    env = LLMEnv(batch_size=(1,), eos_token_id=1)
    with pytest.raises(KeyError, match="DataLoadingPrimer"):
        env.reset()


def test_tokenizer_transform_single_string_max_length_and_inverse(tokenizer):
    t = Tokenizer(in_keys=["text"], out_keys=["tokens"], tokenizer=tokenizer)
    single = t(TensorDict(text="Hello"))
    assert single["tokens"].ndim == 1 and single["attention_mask"].all()
    fixed = Tokenizer(in_keys=["text"], out_keys=[("t", "ids")], tokenizer=tokenizer, max_length=12)
    out = fixed(TensorDict(text=["Hello", "What is 2 + 3?"], batch_size=[2]))
    assert out["t", "ids"].shape == (2, 12) and out["t", "attention_mask"].shape == (2, 12)
    inv = Tokenizer(in_keys_inv=["text_response"], out_keys_inv=["tokens_response"], tokenizer=tokenizer)
    ids = tokenizer(["Hello", "Hi"], padding=True, return_tensors="pt", add_special_tokens=False)
    td = TensorDict(tokens_response=ids["input_ids"], attention_mask=ids["attention_mask"], batch_size=[2])
    assert list(inv.inv(td)["text_response"]) == ["Hello", "Hi"]  # pads dropped through the mask
    with pytest.raises(ValueError, match="bert-base-uncased"):
        Tokenizer(in_keys=["text"])
    with pytest.raises(KeyError, match="text"):
        Tokenizer(in_keys=["text"], tokenizer=tokenizer, missing_tolerance=False)(TensorDict())
