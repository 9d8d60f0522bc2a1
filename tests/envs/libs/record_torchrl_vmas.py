"""Records TorchRL 0.14.1's ``VmasEnv`` specs and rollouts for the cases of ``_vmas_cases.py`` into
``golden_vmas_torchrl_0_14_1.pt``. Not a test; run with the TorchRL reference interpreter (vmas installed)::

    /root/.cache/torchrl-anchor-venv/bin/python tests/envs/libs/record_torchrl_vmas.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _vmas_cases import CASES, trace  # noqa: E402


def main() -> None:
    import torchrl
    import torchrl.envs.libs.vmas as lib
    import vmas

    golden = {
        "torchrl_version": torchrl.__version__,
        "vmas_version": vmas.__version__,
        "cases": {name: trace(lib, name) for name in CASES},
    }
    path = Path(__file__).with_name("golden_vmas_torchrl_0_14_1.pt")
    torch.save(golden, path)
    print(f"wrote {len(CASES)} cases to {path}")


if __name__ == "__main__":
    main()
