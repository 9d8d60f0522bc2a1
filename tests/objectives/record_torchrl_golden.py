"""Records TorchRL 0.14.1's values for the scenarios of ``_golden_scenarios.py`` into
``golden_torchrl_0_14_1_extra.pt``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/objectives/record_torchrl_golden.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _golden_scenarios import SCENARIOS, run  # noqa: E402


def main() -> None:
    import torchrl
    import torchrl.data
    import torchrl.modules
    import torchrl.objectives

    lib = SimpleNamespace(objectives=torchrl.objectives, modules=torchrl.modules, data=torchrl.data)
    golden = {"torchrl_version": torchrl.__version__}
    for name in SCENARIOS:
        golden[name] = run(lib, name)
        print(name, sorted(golden[name]["outs"][0]), sorted(golden[name]["non_tensor"][0]))
    path = Path(__file__).with_name("golden_torchrl_0_14_1_extra.pt")
    torch.save(golden, path)
    print(f"wrote {len(SCENARIOS)} scenarios to {path}")


if __name__ == "__main__":
    main()
