"""Records TorchRL 0.14.1 on ``_dreamer_v3_scenario.py`` into ``dreamer_v3_torchrl_0_14_1.pt``. Not a test; run::

    /root/.cache/torchrl-anchor-venv/bin/python tests/objectives/record_dreamer_v3_golden.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _dreamer_v3_scenario import build, build_blocks, load, run_blocks, run_losses, run_lambda_target, run_optimizer, run_rssm, run_seeded, run_stepper, run_utilities, run_variants  # noqa: E402,I001


def main() -> None:
    torch.manual_seed(0)
    parts = build("torchrl")
    blocks = build_blocks("torchrl")
    states = {name: dict(module.state_dict()) for name, module in {**parts.modules, **blocks}.items()}
    golden = {
        "states": states,
        "utilities": run_utilities("torchrl"),
        "blocks": run_blocks(blocks),
        "rssm": run_rssm(parts),
        "losses": run_losses(parts),
        "variants": run_variants(parts),
        "lambda_target": run_lambda_target(parts).detach(),
        "seeded": run_seeded(parts),
        "optimizer": run_optimizer("torchrl"),
    }
    # The learner steps start from the recorded weights (the runs above leave state behind).
    fresh = build("torchrl")
    load(fresh, build_blocks("torchrl"), states)
    golden["stepper"] = run_stepper(fresh)
    torch.save(golden, Path(__file__).with_name("dreamer_v3_torchrl_0_14_1.pt"))


if __name__ == "__main__":
    main()
