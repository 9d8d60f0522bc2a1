"""Records TorchRL 0.14.1's values for the scenarios of ``_golden_imitation.py`` into
``golden_torchrl_0_14_1_imitation.pt``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/objectives/record_torchrl_golden_imitation.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _golden_imitation import run  # noqa: E402


def main() -> None:
    import torchrl
    import torchrl.modules
    import torchrl.modules.models
    import torchrl.objectives

    lib = SimpleNamespace(modules=torchrl.modules, objectives=torchrl.objectives)
    golden = {"torchrl_version": torchrl.__version__, **run(lib)}
    path = Path(__file__).with_name("golden_torchrl_0_14_1_imitation.pt")
    torch.save(golden, path)
    print(f"wrote {sorted(golden)} to {path}")


if __name__ == "__main__":
    main()
