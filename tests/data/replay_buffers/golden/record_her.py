"""Records HERReplayBuffer goldens with TorchRL 0.14.1 (run with the anchor venv, never from tests).

    ~/.cache/torchrl-anchor-venv/bin/python tests/data/replay_buffers/golden/record_her.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from tensordict import TensorDict

OUT = Path(__file__).with_name("her_torchrl_0_14_1.json")
# Episodes of lengths 4, 3, 5 then an unfinished one of 2 (12 + 2 = 14 rows, capacity 20).
DONE_AT = {3, 6, 11}
ROWS = 14


def steps() -> TensorDict:
    t = torch.arange(ROWS, dtype=torch.float32)
    done = torch.tensor([[i in DONE_AT] for i in range(ROWS)])
    return TensorDict(
        {
            "observation": t.unsqueeze(-1),
            "desired_goal": torch.full((ROWS, 2), -1.0),
            "achieved_goal": torch.stack([t, 10 * t], -1),
            "next": {
                "desired_goal": torch.full((ROWS, 2), -1.0),
                "reward": torch.zeros(ROWS, 1),
                "done": done,
                "terminated": done.clone(),
            },
        },
        batch_size=[ROWS],
    )


def reward_fn(td):
    return -(td["achieved_goal"] - td["desired_goal"]).abs().sum(-1, keepdim=True)


def record(module) -> dict:
    out = {}
    for strategy in ("future", "final", "episode", "random"):
        for ratio in (0.5, 1.0):
            torch.manual_seed(0)
            rb = module.HERReplayBuffer(
                reward_fn, her_ratio=ratio, strategy=strategy, storage=module.LazyTensorStorage(20)
            )
            rb.extend(steps())
            batches = []
            for _ in range(3):
                b = rb.sample(8)
                batches.append(
                    {
                        "index": b["index"].tolist(),
                        "desired_goal": b["desired_goal"].tolist(),
                        "next_desired_goal": b["next", "desired_goal"].tolist(),
                        "reward": b["next", "reward"].tolist(),
                    }
                )
            out[f"{strategy}-{ratio}"] = batches
    return out


if __name__ == "__main__":
    import torchrl.data as trd

    OUT.write_text(json.dumps({"torchrl": __import__("torchrl").__version__, "cases": record(trd)}, indent=0) + "\n")
    print("wrote", OUT, file=sys.stderr)
