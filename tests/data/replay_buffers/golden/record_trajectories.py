"""Records find_start_stop_traj / filter_trajectories goldens with TorchRL 0.14.1 (anchor venv only).

    ~/.cache/torchrl-anchor-venv/bin/python tests/data/replay_buffers/golden/record_trajectories.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import torch
from tensordict import TensorDict

OUT = Path(__file__).with_name("trajectories_torchrl_0_14_1.json")


def boundaries(module) -> list:
    g = torch.Generator().manual_seed(0)
    out = []
    for shape in [(10,), (7, 3), (6, 2, 3), (1,), (1, 2)]:
        for at_capacity in (False, True):
            for cursor in (None, 2):
                cursor = cursor if cursor is None or cursor < shape[0] else None
                end = torch.rand(shape, generator=g) < 0.25
                ids = torch.randint(0, 2, shape, generator=g).cumsum(0) % 3
                for kwargs in ({"end": end}, {"trajectory": ids}):
                    result = module.find_start_stop_traj(at_capacity=at_capacity, cursor=cursor, **kwargs)
                    out.append([x.tolist() for x in result])
    return out


def transitions() -> TensorDict:
    ids = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 3])
    reward = torch.tensor([1.0, 2, 0, 5, 5, 0, 0, 1, 0, 9]).unsqueeze(-1)
    done = torch.zeros(10, 1, dtype=torch.bool)
    done[[2, 4, 8]] = True
    return TensorDict(
        {"traj_ids": ids, "observation": torch.arange(10.0).unsqueeze(-1),
         "next": {"reward": reward, "done": done, "terminated": done.clone()}},
        batch_size=[10],
    )


def filters(module) -> dict:
    t = module.traj
    predicates = {
        "all": None,
        "sum_gt": t.reward.sum() > 2,
        "len_and": (t.length >= 3) & (t.reward.max() <= 2),
        "or_not": ~(t.reward > 4).any() | (t.length == 1),
        "first_last": (t.observation.first() >= 3) & (t.observation.last() < 9),
        "mean": t.reward.mean() > 0.2,
        "total": t.total_reward >= 10,
        "nested": (t[("next", "done")] == True).any(),  # noqa: E712 - builds a predicate
    }
    out = {}
    data = transitions()
    for name, p in predicates.items():
        out[name] = [tr.observation[:, 0].tolist() for tr in module.filter_trajectories(data, p)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_done = module.filter_trajectories(data.exclude("traj_ids"))
    out["by_done"] = [tr.observation[:, 0].tolist() for tr in by_done]
    return out


if __name__ == "__main__":
    import torchrl.data as trd

    OUT.write_text(json.dumps({"torchrl": __import__("torchrl").__version__,
                               "boundaries": boundaries(trd), "filters": filters(trd)}) + "\n")
