"""Records TorchRL 0.14.1's value normalisers on the scenario of ``test_value_norm.py`` (run with the TorchRL
interpreter: ``~/.cache/torchrl-anchor-venv/bin/python tests/modules/record_value_norm_golden.py``)."""

from __future__ import annotations

from pathlib import Path

import torch
from torchrl.modules import PercentileValueNorm, PopArtValueNorm, RunningValueNorm

SCENARIO = (
    (PopArtValueNorm, {"beta": 0.95}),
    (RunningValueNorm, {}),
    (PercentileValueNorm, {"rate": 0.3, "center": True}),
)


def run(classes: dict) -> dict:
    """Scale, normalize(x), denormalize(x) and state_dict after six batches, per normaliser."""
    g = torch.Generator().manual_seed(0)
    batches = [torch.randn(32, 5, 2, generator=g) * (i + 1) + i for i in range(6)]
    x = torch.randn(7, 2, generator=g)
    out = {}
    for cls, kwargs in SCENARIO:
        norm = classes[cls.__name__](shape=2, **kwargs)
        for b in batches:
            norm.update(b)
        out[cls.__name__] = {
            "scale": norm.scale(),
            "normalize": norm.normalize(x),
            "denormalize": norm.denormalize(x),
            "state_dict": dict(norm.state_dict()),
        }
    return out


if __name__ == "__main__":
    golden = run({c.__name__: c for c, _ in SCENARIO})
    torch.save(golden, Path(__file__).with_name("value_norm_torchrl_0_14_1.pt"))
