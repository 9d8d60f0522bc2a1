"""Records TorchRL 0.14.1's custom envs (``_custom_cases.py``) into ``golden_custom_torchrl_0_14_1.pt``.

Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/envs/custom/record_torchrl_custom.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _custom_cases import CASES, run  # noqa: E402


def main() -> None:
    import torchrl
    import torchrl.envs as envs

    golden = {"torchrl_version": torchrl.__version__, "cases": {name: run(envs, name) for name in CASES}}
    path = Path(__file__).with_name("golden_custom_torchrl_0_14_1.pt")
    torch.save(golden, path)
    print(f"wrote {len(CASES)} cases to {path}")


if __name__ == "__main__":
    main()
