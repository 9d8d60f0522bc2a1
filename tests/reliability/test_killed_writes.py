"""Killed writes: a writer SIGKILL-ed at a random moment of a buffer dump or trainer checkpoint leaves either
the previous or the new checkpoint, complete, never a torn one.

The kills are made by ``benchmarks/reliability_data.py --only kills`` (which forks the writers: one
interpreter start for all kills), the script behind the figures of ``docs/reliability.md``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "reliability_data.py"


@pytest.mark.integration
def test_random_kills_never_leave_a_torn_checkpoint():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--only", "kills", "--json", "--seed", "3"],
                          capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)["kills"]
    for case, counts in results.items():
        assert counts["torn"] == 0, (case, counts)
        assert counts["loaded_previous"] + counts["loaded_new"] == counts["injected"], (case, counts)
        assert counts["killed_mid_write"] > 0, f"{case}: no kill landed in the middle of a write ({counts})"
