"""Records DensifyReward goldens with TorchRL 0.14.1 (anchor venv only).

    ~/.cache/torchrl-anchor-venv/bin/python tests/data/golden/record_densify.py
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tensordict import TensorDict

OUT = Path(__file__).with_name("densify_torchrl_0_14_1.json")


def batch(seed: int, shape: tuple[int, ...]) -> TensorDict:
    g = torch.Generator().manual_seed(seed)
    reward = torch.randn(*shape, 1, generator=g)
    done = torch.rand(*shape, 1, generator=g) < 0.2
    return TensorDict({"next": {"reward": reward, "done": done}}, batch_size=shape)


def record(module) -> dict:
    out = {}
    for name, shape, kwargs in [
        ("flat", (12,), {}),
        ("batched", (3, 9), {"discount": 0.9}),
        ("out_key", (2, 7), {"reward_key_out": "dense", "discount": 0.5}),
    ]:
        td = module.DensifyReward(**kwargs)(batch(len(name), shape))
        key = kwargs.get("reward_key_out", "reward")
        out[name] = [round(v, 5) for v in td["next", key].reshape(-1).tolist()]
    return out


if __name__ == "__main__":
    import torchrl.data as trd

    OUT.write_text(json.dumps({"torchrl": __import__("torchrl").__version__, "cases": record(trd)}) + "\n")
