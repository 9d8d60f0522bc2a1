"""Records TorchRL 0.14.1's keyword-call outputs of the scenario in ``_call_style_scenario.py`` into
``call_styles_torchrl_0_14_1.json``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/objectives/record_call_styles_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _call_style_scenario import LOSSES, outputs  # noqa: E402


def main() -> None:
    golden = {}
    for name in LOSSES:
        golden[name] = outputs("torchrl", name)
        golden[f"{name}_nonfunctional"] = outputs("torchrl", name, functional=False)
    out = Path(__file__).parent / "call_styles_torchrl_0_14_1.json"
    out.write_text(json.dumps(golden, indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()
