"""Records TorchRL 0.14.1's wrappers of the cases of ``_extra_libs_cases.py`` whose library is installed into
``golden_extra_libs_torchrl_0_14_1.pt``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/envs/libs/record_torchrl_extra_libs.py
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _extra_libs_cases import CASES, REQUIRES, run  # noqa: E402


def main() -> None:
    import torchrl
    import torchrl.envs.libs as libs

    names = [n for n in CASES if importlib.util.find_spec(REQUIRES[n]) is not None]
    golden = {"torchrl_version": torchrl.__version__, "cases": {n: run(libs, n) for n in names}}
    path = Path(__file__).with_name("golden_extra_libs_torchrl_0_14_1.pt")
    torch.save(golden, path)
    print(f"wrote {len(names)} cases to {path}")


if __name__ == "__main__":
    main()
