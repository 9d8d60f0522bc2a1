"""Records StalenessAwareSampler goldens with TorchRL 0.14.1 (anchor venv only).

    ~/.cache/torchrl-anchor-venv/bin/python tests/data/replay_buffers/golden/record_staleness.py
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tensordict import TensorDict

OUT = Path(__file__).with_name("staleness_torchrl_0_14_1.json")
VERSIONS = [0, 1, 1, 2, 3, 3, 4, 5, 5, 5]
CASES = [
    ("nocut", {}, 5),
    ("cut", {"max_staleness": 2}, 5),
    ("fn", {"staleness_weight_fn": lambda s: (s + 1.0) ** -2}, 9),
]


def record(module, sampler_cls) -> dict:
    out = {}
    for name, kwargs, consumer_version in CASES:
        for batch_size in (3, 12):
            torch.manual_seed(0)
            sampler = sampler_cls(**kwargs)
            rb = module.TensorDictReplayBuffer(storage=module.LazyTensorStorage(16), sampler=sampler)
            rb.extend(TensorDict(policy_version=torch.tensor(VERSIONS), x=torch.arange(10), batch_size=[10]))
            sampler.consumer_version = consumer_version
            draws = []
            for _ in range(3):
                batch = rb.sample(batch_size)
                draws.append([batch["index"].tolist(), batch["staleness"].tolist()])
            out[f"{name}-{batch_size}"] = draws
    return out


if __name__ == "__main__":
    import torchrl.data as trd
    from torchrl.data.replay_buffers.samplers import StalenessAwareSampler

    result = record(trd, StalenessAwareSampler)
    OUT.write_text(json.dumps({"torchrl": __import__("torchrl").__version__, "cases": result}) + "\n")
