"""The examples run end to end with tiny budgets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_ppo_cartpole_example_runs():
    out = subprocess.run([sys.executable, str(ROOT / "examples/ppo/ppo_cartpole.py"), "--frames", "2048"],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert "deterministic return over 10 episodes" in out.stdout
