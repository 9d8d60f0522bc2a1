"""Records TorchRL 0.14.1's GSM8K/Countdown reward values and Countdown problems (run by hand).

    ~/.cache/torchrl-anchor-venv/bin/python tests/envs/llm/record_torchrl_golden.py

writes ``tests/envs/llm/golden_torchrl_0_14_1.json``, which ``test_rewards.py`` checks tdrl against.
"""

from __future__ import annotations

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _cases import COUNTDOWN_CASES, COUNTDOWN_SEEDS, GSM8K_CASES  # noqa: E402

FIELDS = ("reward_answer", "reward_think", "reward_right", "reward", "success")


def _score(parser, response, answer, parse_truth):
    cot, potential = parser.extract_tags(response.removesuffix("<|im_end|>"))
    td = parser._single_correctness_reward(*parse_truth(answer), potential, cot)
    return {k: td[k].item() for k in FIELDS}


def main() -> None:
    import torchrl
    from torchrl.envs.llm import CountdownRewardParser, GSM8KRewardParser
    from torchrl.envs.llm.datasets.countdown import _CountdownProblemGenerator

    gsm, cd = GSM8KRewardParser(), CountdownRewardParser()
    out = {
        "torchrl": torchrl.__version__,
        "gsm8k": [_score(gsm, r, a, lambda a: (a.split("#### ")[1],)) for r, a in GSM8K_CASES],
        "countdown": [_score(cd, r, a, cd._parse_ground_truth) for r, a in COUNTDOWN_CASES],
        "countdown_problems": {},
    }
    for seed, count, max_number in COUNTDOWN_SEEDS:
        gen = iter(_CountdownProblemGenerator(num_count=count, max_number=max_number, seed=seed))
        out["countdown_problems"][f"{seed}|{count}|{max_number}"] = [next(gen) for _ in range(5)]
    (HERE / "golden_torchrl_0_14_1.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
