"""Records TorchRL 0.14.1's ``torchrl.render`` helpers on ``_utils_scenario.py`` into
``render_utils_torchrl_0_14_1.json``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/render/record_utils_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _utils_scenario import run  # noqa: E402


def main() -> None:
    import torchrl.render

    out = Path(__file__).parent / "render_utils_torchrl_0_14_1.json"
    out.write_text(json.dumps(run(torchrl.render), indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()
