"""GSM8K / Countdown reward parsers and task envs: TorchRL 0.14.1's values, and full rollouts."""

from __future__ import annotations

import json
import pathlib

import pytest
import torch
from tensordict import lazy_stack

from tdrl.data.llm import History
from tdrl.envs.llm import CountdownEnv, CountdownRewardParser, GSM8KEnv, GSM8KRewardParser
from tdrl.envs.llm.datasets.countdown import CountdownProblemGenerator

from ._cases import COUNTDOWN_CASES, COUNTDOWN_SEEDS, GSM8K_CASES

GOLDEN = json.loads((pathlib.Path(__file__).parent / "golden_torchrl_0_14_1.json").read_text())


@pytest.mark.parametrize("i", range(len(GSM8K_CASES)))
def test_gsm8k_scores_match_torchrl(i):
    response, answer = GSM8K_CASES[i]
    assert GSM8KRewardParser().score(response, answer) == pytest.approx(GOLDEN["gsm8k"][i])


@pytest.mark.parametrize("i", range(len(COUNTDOWN_CASES)))
def test_countdown_scores_match_torchrl(i):
    response, answer = COUNTDOWN_CASES[i]
    assert CountdownRewardParser().score(response, answer) == pytest.approx(GOLDEN["countdown"][i])


@pytest.mark.parametrize("seed,count,max_number", COUNTDOWN_SEEDS)
def test_countdown_problems_match_torchrl(seed, count, max_number):
    gen = iter(CountdownProblemGenerator(num_count=count, max_number=max_number, seed=seed))
    assert [next(gen) for _ in range(5)] == GOLDEN["countdown_problems"][f"{seed}|{count}|{max_number}"]


def test_countdown_expressions_are_not_evaluated_as_python():
    # Arbitrary code never runs: only numbers and + - * / are interpreted.
    assert not CountdownRewardParser.validate_expression("2**10", 1024, [2, 10])
    assert not CountdownRewardParser.validate_expression("(1).__class__", 1, [1])
    assert CountdownRewardParser.validate_expression("-(1 - 3)", 2, [1, 3])


def test_bad_references_raise():
    with pytest.raises(ValueError, match="####"):
        GSM8KRewardParser().score("<answer>1</answer>", "no marker")
    with pytest.raises(ValueError, match="target=T"):
        CountdownRewardParser().score("<answer>1</answer>", "nothing")


def _reply(td, texts):
    prompt = td["history"].prompt
    replies = lazy_stack([History(role="assistant", content=t).unsqueeze(0) for t in texts])
    td["history"].full = prompt.extend(replies, inplace=False, dim=-1)
    return td


def test_gsm8k_env_rollout_rewards(gsm8k_records):
    env = GSM8KEnv(dataset=gsm8k_records, shuffle=False, num_envs=2)
    td = env.reset()
    assert list(td["answer"]) == [r["answer"] for r in gsm8k_records[:2]]
    assert td["history"].prompt[0, 0].role == "system"
    assert td["history"].prompt[1, -1].content == gsm8k_records[1]["question"]
    td = env.step(_reply(td, ["<think>3 + 5</think><answer>8</answer>", "<answer>47</answer>"]))
    nxt = td["next"]
    assert nxt["reward"].shape == (2, 1, 1)
    torch.testing.assert_close(nxt["reward"].flatten(), torch.tensor([1.0, 0.1]))
    assert nxt["success"].flatten().tolist() == [True, False]
    assert nxt["done"].all()  # answered (and max_steps=1)


def test_gsm8k_env_text_mode(gsm8k_records, tokenizer):
    env = GSM8KEnv(dataset=gsm8k_records, shuffle=False, input_mode="text", tokenizer=tokenizer)
    td = env.reset()
    prompt = td["text"].prompt[0]
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith("<|im_start|>assistant\n")
    td["text"].full = [prompt + "<answer>8</answer><|im_end|>"]
    td = env.step(td)
    assert td["next", "reward"].item() == 1.0


def test_gsm8k_env_tokens_mode(gsm8k_records, tokenizer):
    env = GSM8KEnv(dataset=gsm8k_records, shuffle=False, input_mode="tokens", tokenizer=tokenizer)
    td = env.reset()
    prompt = td["tokens"].get("prompt", as_list=True)[0]
    reply = tokenizer("<answer>8</answer>", add_special_tokens=False, return_tensors="pt")["input_ids"][0]
    td["tokens"].full = [torch.cat([prompt, reply])]
    td = env.step(td)
    assert td["next", "reward"].item() == 1.0
    assert torch.equal(td["next", "tokens"].get("prompt", as_list=True)[0], torch.cat([prompt, reply]))


def test_countdown_env_rollout():
    env = CountdownEnv(num_count=2, max_number=9, seed=0, num_envs=2, repeats=2, group_repeats=True)
    assert env.batch_size == (4,)
    td = env.reset()
    answers = list(td["answer"])
    assert answers[0] == answers[1] and answers[2] == answers[3]  # a group shares its problem
    td = env.step(_reply(td, ["<answer>7 + 7</answer>", "<answer>7 * 7</answer>", "", "<think>hm</think>"]))
    rewards = td["next", "reward"].flatten().tolist()
    assert rewards[:2] == pytest.approx([1.0, 0.1]) and rewards[2:] == [0.0, 0.0]


def test_hub_name_without_network_names_the_argument():
    with pytest.raises((ImportError, ConnectionError), match="dataset='openai/gsm8k'"):
        GSM8KEnv()
