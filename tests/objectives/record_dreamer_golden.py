"""Records TorchRL 0.14.1 on ``_dreamer_scenario.py`` into ``dreamer_torchrl_0_14_1.pt``. Not a test; run::

    /root/.cache/torchrl-anchor-venv/bin/python tests/objectives/record_dreamer_golden.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _dreamer_scenario import build_dreamer, load, planners, run_dreamer  # noqa: E402


def main() -> None:
    torch.manual_seed(0)
    parts = build_dreamer("torchrl")
    states = {name: dict(getattr(parts, name).state_dict()) for name in ("world_model", "actor", "value")}
    golden = {"states": states, "dreamer": run_dreamer(parts), "planners": planners("torchrl")}
    lam = build_dreamer("torchrl", "tdlambda")
    load(lam, states)
    golden["dreamer_tdlambda"] = run_dreamer(lam)
    torch.save(golden, Path(__file__).with_name("dreamer_torchrl_0_14_1.pt"))


if __name__ == "__main__":
    main()
