"""Records TorchRL 0.14.1's DistillationLoss values and gradients (``_distill_scenarios.py``) into
``golden_distill_torchrl_0_14_1.pt``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/objectives/llm/record_torchrl_distill_golden.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _distill_scenarios import DISTILL_SCENARIOS, run_distill  # noqa: E402


def main() -> None:
    import torchrl
    from torchrl.objectives.llm import DistillationLoss

    golden = {"torchrl_version": torchrl.__version__, "distill": {}}
    for name in DISTILL_SCENARIOS:
        golden["distill"][name] = run_distill(DistillationLoss, name)
        print(name, {k: v.tolist() for k, v in golden["distill"][name]["values"].items()})
    path = Path(__file__).with_name("golden_distill_torchrl_0_14_1.pt")
    torch.save(golden, path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
