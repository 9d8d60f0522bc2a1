"""Every ``examples/<algo>/train.py`` runs end to end with a tiny budget and reports its evaluated return."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# Tiny budgets: a few batches and gradient steps, small networks where the example takes --hidden.
_ON_POLICY = ["--total-frames", "512", "--frames-per-batch", "256", "--minibatch-size", "128", "--num-epochs", "1"]
_CONTINUOUS = ["--total-frames", "1100", "--init-random-frames", "1000", "--frames-per-batch", "100",
               "--hidden", "16", "--batch-size", "16"]
_OFFLINE = ["--gradient-steps", "6", "--eval-interval", "3", "--dataset-frames", "1000", "--hidden", "16",
            "--batch-size", "16"]
SMOKE = {
    "ppo": _ON_POLICY,
    "a2c": _ON_POLICY,
    "reinforce": _ON_POLICY,
    "dqn": ["--total-frames", "1536", "--init-random-frames", "1024", "--gradient-steps", "4", "--hidden", "16"],
    "sac": _CONTINUOUS,
    "td3": _CONTINUOUS,
    "ddpg": _CONTINUOUS,
    "redq": [*_CONTINUOUS, "--num-qvalue-nets", "3"],
    "cql": _OFFLINE,
    "iql": _OFFLINE,
}


def test_every_example_folder_has_a_smoke_test_a_readme_and_a_short_script():
    # mappo needs the `marl` extra: tests/examples/test_mappo.py runs it (and skips without vmas).
    folders = {p.parent.name for p in EXAMPLES.glob("*/train.py")} - {"mappo"}
    assert folders == set(SMOKE)
    for name in folders:
        assert (EXAMPLES / name / "README.md").is_file(), name
        assert len((EXAMPLES / name / "train.py").read_text().splitlines()) < 300, name


# One interpreter runs every example in turn (runpy, as `python train.py ...` would): starting torch,
# gymnasium and tdrl once rather than ten times keeps the smoke test at seconds per example.
_RUNNER = """
import json, runpy, sys
runs, root = json.loads(sys.argv[1]), sys.argv[2]
for name, argv in runs.items():
    sys.argv = [f"{root}/{name}/train.py", *argv]
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.integration
def test_every_example_runs_with_a_tiny_budget(tmp_path):
    runs = {name: [*argv, "--eval-episodes", "2", "--out", str(tmp_path / f"{name}.json")] for name, argv in SMOKE.items()}
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", _RUNNER, json.dumps(runs), str(EXAMPLES)], capture_output=True,
                          text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in SMOKE:
        assert f"RESULT {name} " in proc.stdout, proc.stdout[-3000:]
        result = json.loads((tmp_path / f"{name}.json").read_text())
        assert result["algo"] == name and result["eval_episodes"] == 2
        assert isinstance(result["eval_return_mean"], float)
