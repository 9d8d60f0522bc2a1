"""Records TorchRL 0.14.1's values for the scenarios of ``_golden_seq.py`` into
``golden_torchrl_0_14_1_seq.pt``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/objectives/record_torchrl_golden_seq.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).parent.parent))

from objectives._golden_scenarios import run  # noqa: E402
from objectives._golden_seq import SCENARIOS, inference_trace  # noqa: E402


def main() -> None:
    import torchrl
    import torchrl.data
    import torchrl.modules
    import torchrl.objectives

    lib = SimpleNamespace(objectives=torchrl.objectives, modules=torchrl.modules, data=torchrl.data)
    golden: dict = {"torchrl_version": torchrl.__version__, "losses": {}}
    for name in SCENARIOS:
        golden["losses"][name] = run(lib, name, scenarios=SCENARIOS, plain_loss=True)
        print(name, sorted(golden["losses"][name]["outs"][0]), sorted(golden["losses"][name]["grads"]))
    golden["inference"] = {ctx: inference_trace(lib, ctx) for ctx in (1, 2, 4)}
    path = Path(__file__).with_name("golden_torchrl_0_14_1_seq.pt")
    torch.save(golden, path)
    print(f"wrote {len(SCENARIOS)} scenarios to {path}")


if __name__ == "__main__":
    main()
