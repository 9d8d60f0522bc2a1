"""make_gsm8k_env: the older one-step text GSM8K builder, on local records (no download)."""

from __future__ import annotations

import pytest
import torch
from tensordict import NonTensorStack

from tdrl.envs.llm import make_gsm8k_env
from tdrl.envs.llm.datasets.gsm8k import BASE_PROMPT

RECORDS = [{"question": "What is 2 + 3?", "answer": "2 + 3 = 5 #### 5"},
           {"question": "What is 4 + 4?", "answer": "4 + 4 = 8 #### 8"}]


def _build(**kwargs):
    with pytest.warns(DeprecationWarning, match="GSM8KEnv"):
        return make_gsm8k_env(RECORDS, **kwargs)


def test_reset_wraps_the_question_and_one_step_scores_the_answer(tokenizer):
    env = _build(num_envs=2, seed=0, tokenizer=tokenizer)
    td = env.reset()
    questions = {r["question"]: r["answer"].split("#### ")[-1] for r in RECORDS}
    texts = list(td["text"])
    assert sorted(texts) == sorted(BASE_PROMPT % q for q in questions)
    answers = [a.split("#### ")[-1] for a in td["answer"]]
    replies = [f"adding</think> <answer>{answers[0]}</answer>", "no idea</think> <answer>0</answer>"]
    td["text_response"] = NonTensorStack(*replies)
    out = env.step(td)["next"]
    assert out["done"].all() and out["step_count"].squeeze(-1).tolist() == [1, 1]
    reward = out["reward"].reshape(-1)
    assert reward[0] > reward[1] and torch.isclose(reward[1], torch.tensor(0.1))


def test_seeded_order_and_no_tokenizer_warning():
    with pytest.warns(UserWarning, match="no reward"):
        first = _build(seed=3).reset()["text"]
    with pytest.warns(UserWarning, match="no reward"):
        again = _build(seed=3).reset()["text"]
    assert list(first) == list(again)
    with pytest.warns(UserWarning, match="no reward"):
        env = _build(seed=0, repeats=2)
    assert env.reset()["text"][0] == env.reset()["text"][0]  # the same question served twice
    with pytest.warns(DeprecationWarning), pytest.raises(ImportError, match="dataset="):
        make_gsm8k_env("some/hub-dataset")
