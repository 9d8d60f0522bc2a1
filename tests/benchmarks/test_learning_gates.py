"""The gates of docs/results.md for the three presets CI checks (learning runs: ``pytest -m slow``).

Each trains the preset as shipped with seed 0 through ``benchmarks/learning/run.py``'s path (the one
``tdrl train`` takes) and checks the gate on the last policy's 10-episode deterministic return.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))
run = importlib.import_module("run")
results_table = importlib.import_module("results_table")


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("preset", ["ppo_cartpole", "dqn_cartpole", "sac_pendulum"])
def test_shipped_preset_meets_its_gate_with_seed_0(preset, tmp_path):
    row = run.train_one(preset, 0, runs_dir=tmp_path, overrides=[], episodes=10)
    gate = results_table.GATES[preset]
    print(f"{preset}: last policy {row['final_return']:.1f}, first reached {row['frames_to_threshold']}, "
          f"tail min {row['tail_min']}, {row['wall_time_s']:.0f} s")
    assert results_table.gate_passes(row, gate), (gate.describe(), {k: row[k] for k in (
        "frames", "final_return", "tail_min", "frames_to_threshold")})
