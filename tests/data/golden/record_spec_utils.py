"""Records consolidate_spec / check_no_exclusive_keys / contains_lazy_spec goldens with TorchRL 0.14.1.

    ~/.cache/torchrl-anchor-venv/bin/python tests/data/golden/record_spec_utils.py
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

OUT = Path(__file__).with_name("spec_utils_torchrl_0_14_1.json")


def cases(m) -> dict:
    c, u, b = m.Composite, m.Unbounded, m.Bounded
    return {
        "leaf_same_shape": torch.stack([c(a=u(3)), c(a=u(3), b=u(2)), c(a=u(3), b=u(2))], 0),
        "leaf_hetero": torch.stack([c(a=u(3), b=u(4)), c(a=u(3)), c(a=u(3), b=u(2))], 0),
        "batched": torch.stack([c(a=u((2, 3)), shape=(2,)), c(a=u((2, 3)), x=b(-1, 1, (2, 5)), shape=(2,))], 0),
        "nested": torch.stack([c(a=u(1), n=c(p=u(2))), c(a=u(1), n=c(p=u(2), q=u(3)), z=c(w=u(1)))], 0),
        "dense": c(a=u(1), n=c(p=u(2))),
    }


def describe(spec) -> dict:
    out = {}
    for i in range(spec.shape[0]) if spec.ndim and type(spec).__name__ == "StackedComposite" else []:
        member = spec[i]
        out[str(i)] = sorted(
            [str(k), list(member[k].shape), type(member[k]).__name__]
            for k in member.keys(include_nested=True, leaves_only=True)
        )
    return out


def record(m) -> dict:
    out = {}
    for name, spec in cases(m).items():
        consolidated = m.consolidate_spec(spec)
        out[name] = {
            "before": [m.check_no_exclusive_keys(spec), m.contains_lazy_spec(spec)],
            "after": [m.check_no_exclusive_keys(consolidated), m.contains_lazy_spec(consolidated)],
            "members": describe(consolidated),
        }
    return out


if __name__ == "__main__":
    import torchrl.data as trd

    OUT.write_text(json.dumps({"torchrl": __import__("torchrl").__version__, "cases": record(trd)}) + "\n")
