"""Records TorchRL 0.14.1's ``PettingZooWrapper`` specs and rollouts for the cases of ``_pettingzoo_cases.py`` into
``golden_pettingzoo_torchrl_0_14_1.pt``. Not a test; run with the TorchRL reference interpreter (pettingzoo installed)::

    /root/.cache/torchrl-anchor-venv/bin/python tests/envs/libs/record_torchrl_pettingzoo.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _pettingzoo_cases import CASES, trace  # noqa: E402


def main() -> None:
    import pettingzoo
    import torchrl
    import torchrl.envs.libs.pettingzoo as lib

    golden = {
        "torchrl_version": torchrl.__version__,
        "pettingzoo_version": pettingzoo.__version__,
        "cases": {name: trace(lib, name) for name in CASES},
    }
    path = Path(__file__).with_name("golden_pettingzoo_torchrl_0_14_1.pt")
    torch.save(golden, path)
    print(f"wrote {len(CASES)} cases to {path}")


if __name__ == "__main__":
    main()
