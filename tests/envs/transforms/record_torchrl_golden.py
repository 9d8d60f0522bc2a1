"""Records TorchRL 0.14.1's values for the scenarios of ``_transform_golden_scenarios.py`` into
``golden_torchrl_0_14_1.pt``. Not a test; run with the TorchRL reference interpreter::

    ~/.cache/torchrl-anchor-venv/bin/python tests/envs/transforms/record_torchrl_golden.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _transform_golden_scenarios import SCENARIOS  # noqa: E402


def main() -> None:
    import torchrl
    import torchrl.data
    import torchrl.envs

    lib = SimpleNamespace(envs=torchrl.envs, data=torchrl.data)
    golden = {"torchrl_version": torchrl.__version__}
    for name, scenario in SCENARIOS.items():
        golden[name] = scenario(lib)
        print(name, sorted(golden[name]))
    path = Path(__file__).with_name("golden_torchrl_0_14_1.pt")
    torch.save(golden, path)
    print(f"wrote {len(SCENARIOS)} scenarios to {path}")


if __name__ == "__main__":
    main()
