"""Records TorchRL 0.14.1's ``torchrl.data.map`` on the cases of ``_hash_cases.py`` and ``_forest_scenarios.py``
into ``map_torchrl_0_14_1.json``. Not a test; run with the TorchRL reference interpreter from the repository
root (it re-runs itself under ``PYTHONHASHSEED=0``, which the hash values depend on)::

    /root/.cache/torchrl-anchor-venv/bin/python tests/data/map/record_map_golden.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        raise SystemExit(subprocess.call([sys.executable, __file__], env=env))
    from _forest_scenarios import SCENARIOS, describe_scenario
    from _hash_cases import compute
    from torchrl.data import MCTSForest

    golden = {
        "hashes": compute("torchrl"),
        "forests": {name: describe_scenario(MCTSForest, name) for name in SCENARIOS},
    }
    (HERE / "map_torchrl_0_14_1.json").write_text(json.dumps(golden, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
