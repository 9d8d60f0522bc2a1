"""Records TorchRL 0.14.1's value normalisers on the scenario of ``test_value_norm.py`` into
``value_norm_torchrl_0_14_1.pt``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/modules/record_value_norm_golden.py
"""

from __future__ import annotations

from pathlib import Path

import torch

SCENARIO = {"PopArtValueNorm": {"beta": 0.95}, "RunningValueNorm": {}, "PercentileValueNorm": {"rate": 0.3, "center": True}}


def main() -> None:
    import torchrl.modules

    g = torch.Generator().manual_seed(0)
    batches = [torch.randn(32, 5, 2, generator=g) * (i + 1) + i for i in range(6)]
    x = torch.randn(7, 2, generator=g)
    golden = {}
    for name, kwargs in SCENARIO.items():
        norm = getattr(torchrl.modules, name)(shape=2, **kwargs)
        for b in batches:
            norm.update(b)
        golden[name] = {
            "scale": norm.scale(),
            "normalize": norm.normalize(x),
            "denormalize": norm.denormalize(x),
            "state_dict": dict(norm.state_dict()),
        }
    torch.save(golden, Path(__file__).with_name("value_norm_torchrl_0_14_1.pt"))


if __name__ == "__main__":
    main()
