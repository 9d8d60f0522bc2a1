"""Records SamplerEnsemble / StorageEnsemble goldens with TorchRL 0.14.1 (anchor venv only).

    ~/.cache/torchrl-anchor-venv/bin/python tests/data/replay_buffers/golden/record_ensembles.py
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

OUT = Path(__file__).with_name("ensembles_torchrl_0_14_1.json")
CASES = {
    "uniform": {"num_buffer_sampled": 4},
    "p": {"p": [0.2, 0.0, 0.8], "num_buffer_sampled": 5},
    "sampleable": {"p": "sampleable", "num_buffer_sampled": 3},
    "all": {"sample_from_all": True},
}


def storages(module):
    out = []
    for i, n in enumerate((3, 5, 7)):
        s = module.LazyTensorStorage(8)
        s.set(torch.arange(n), 100 * i + torch.arange(n))
        out.append(s)
    return module.StorageEnsemble(*out)


def record(module) -> dict:
    result = {}
    for name, kwargs in CASES.items():
        for member in ("RandomSampler", "SamplerWithoutReplacement"):
            torch.manual_seed(0)
            sampler = module.SamplerEnsemble(*(getattr(module, member)() for _ in range(3)), **kwargs)
            storage = storages(module)
            draws = []
            for _ in range(3):
                index, _ = sampler.sample(storage, 6 if name == "all" else 12 if name != "p" else 10)
                values = [v.tolist() for _, v in storage.get(index)]
                draws.append({"buffer_ids": index["buffer_ids"].tolist(), "index": [t.tolist() for t in index["index"].unbind(0)],
                              "values": values})
            result[f"{name}-{member}"] = draws
    return result


if __name__ == "__main__":
    import torchrl.data as trd

    OUT.write_text(json.dumps({"torchrl": __import__("torchrl").__version__, "cases": record(trd)}) + "\n")
