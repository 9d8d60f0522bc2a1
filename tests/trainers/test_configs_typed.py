"""mypy is clean on the structured configs (``tdrl.trainers.algorithms.configs``): their types are the schema."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install tdrl[dev])")
@pytest.mark.timeout(900)
def test_mypy_is_clean_on_the_configs_package():
    # Imports outside the package are analysed for their types but not reported (other packages have their
    # own CI check); the incremental cache in .mypy_cache makes reruns take seconds.
    cmd = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports",
           "--cache-dir", str(ROOT / ".mypy_cache"), "-p", "tdrl.trainers.algorithms.configs"]
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "Success: no issues found" in out.stdout
