r"""MATHEnv and MATHRewardParser: ``\boxed{}`` answers, fed from local problem/solution records."""

from __future__ import annotations

import pytest
import torch
from tensordict import lazy_stack

from tdrl.data.llm import History
from tdrl.envs.llm import MATHEnv, MATHRewardParser
from tdrl.envs.llm.reward.math import extract_boxed, normalize_math

RECORDS = [
    {"problem": "What is $1 + \\frac{1}{2}$?", "solution": "We add: $1 + \\frac{1}{2} = \\boxed{\\frac{3}{2}}$."},
    {"problem": "Solve $x^2 = 4$ for $x > 0$.", "solution": "Since $x>0$, $x = \\boxed{2}$."},
    {"problem": "Give the interval where $x^2 < 1$.", "solution": "It is $\\boxed{\\left(-1, 1\\right)}$."},
    {"problem": "Simplify $\\sqrt{8}$.", "solution": "$\\sqrt{8} = \\boxed{2\\sqrt{2}}$"},
]


def _reply(td, texts):  # noqa: ANN001, ANN202
    prompt = td["history"].prompt
    replies = lazy_stack([History(role="assistant", content=t).unsqueeze(0) for t in texts])
    td["history"].full = prompt.extend(replies, inplace=False, dim=-1)
    return td


def test_boxed_extraction_handles_nesting_and_missing_boxes() -> None:
    assert extract_boxed(r"a \boxed{1} then \boxed{\frac{a}{b}} end") == r"\frac{a}{b}"
    assert extract_boxed(r"\boxed{\sqrt{2}") == r"\sqrt{2}"  # unclosed: the rest of the text
    assert extract_boxed("no box") == "no box"
    assert normalize_math(r"\left(-1, 1\right)") == "(-11)"


@pytest.mark.parametrize(
    ("reply", "reference", "reward", "success"),
    [
        (r"<think>add</think><answer>\frac{3}{2}</answer>", RECORDS[0]["solution"], 1.0, True),
        (r"<answer>\boxed{\dfrac{3}{2}}</answer>", RECORDS[0]["solution"], 1.0, True),
        (r"<answer>$(-1, 1)$</answer>", RECORDS[2]["solution"], 1.0, True),
        ("<answer>3</answer>", RECORDS[1]["solution"], 0.1, False),
        (r"\boxed{2}", RECORDS[1]["solution"], 0.0, False),  # no answer block
    ],
)
def test_scores(reply: str, reference: str, reward: float, success: bool) -> None:
    out = MATHRewardParser().score(reply, reference)
    assert out["reward"] == reward and out["success"] is success
    assert out["reward_think"] == float(reply.startswith("<think>"))


def test_bad_reference_raises() -> None:
    with pytest.raises(ValueError, match="reference solution must be a non-empty string"):
        MATHRewardParser().score("<answer>1</answer>", "")


def test_env_rollout_rewards() -> None:
    env = MATHEnv(dataset=RECORDS, shuffle=False, num_envs=2)
    td = env.reset()
    assert list(td["answer"]) == [r["solution"] for r in RECORDS[:2]]
    assert td["history"].prompt[0, 0].role == "system"
    assert td["history"].prompt[0, 0].content == MATHEnv.SYSTEM_PROMPT
    assert td["history"].prompt[1, -1].content == RECORDS[1]["problem"]
    td = env.step(_reply(td, [r"<think>1 + 1/2</think><answer>\frac{3}{2}</answer>", "<answer>-2</answer>"]))
    nxt = td["next"]
    assert nxt["reward"].shape == (2, 1, 1)
    torch.testing.assert_close(nxt["reward"].flatten(), torch.tensor([1.0, 0.1]))
    assert nxt["success"].flatten().tolist() == [True, False]
    assert nxt["done"].all()


def test_hub_name_without_network_names_the_dataset() -> None:
    with pytest.raises((ImportError, ConnectionError), match="DigitalLearningGmbH/MATH-lighteval"):
        MATHEnv()
