"""``benchmarks/loop/``: the side-by-side loop harness (the tdrl run end to end; the phase split; the table)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
LOOP = ROOT / "benchmarks" / "loop"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"loop_{name}", LOOP / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    sys.path.insert(0, str(LOOP))  # run.py and rl_api.py import their sibling common.py
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(LOOP))
    return module


def test_the_split_counts_the_policy_only_while_collecting_and_nested_phases_once():
    common = _module("common")
    timer = common.PhaseTimer()
    policy = torch.nn.Linear(2, 2)
    timer.watch_policy(policy)
    x = torch.zeros(1, 2)
    with timer.phase("collect"):
        policy(x)
        with timer.phase("advantage"):  # SB3 computes advantages inside its collection
            time.sleep(0.02)
            policy(x)  # a value call inside the advantage phase is not the policy acting
    with timer.phase("update"):
        policy(x)
    split = timer.split(advantage_inside_collect=True)
    assert split["advantage"] >= 0.02
    assert 0 < split["policy"] < 0.02
    assert split["env"] >= 0 and split["env"] < 0.02  # the collect phase without the nested advantage
    parts = sum(split[k] for k in common.PHASES)
    assert parts == pytest.approx(split["total"], rel=1e-6)


def test_workload_overrides_are_typed_and_checked():
    common = _module("common")
    hp = common.workload("ppo_cartpole", {"total_frames": "512"})
    assert hp.total_frames == 512 and hp.num_envs == 8
    with pytest.raises(SystemExit, match="unknown ppo_cartpole hyperparameters \\['totl_frames'\\]"):
        common.workload("ppo_cartpole", {"totl_frames": "1"})


@pytest.mark.parametrize("workload,overrides", [
    ("ppo_cartpole", ["total_frames=512", "num_epochs=2", "eval_episodes=1"]),
    ("sac_pendulum", ["total_frames=300", "init_random_frames=200", "batch_size=32", "eval_episodes=1"]),
])
def test_the_tdrl_run_prints_a_result_line(workload, overrides, tmp_path):
    cmd = [sys.executable, str(LOOP / "rl_api.py"), workload, "--backend", "tdrl"]
    for item in overrides:
        cmd += ["--set", item]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(line for line in out.stdout.splitlines() if line.startswith("LOOP_RESULT "))
    result = json.loads(line.removeprefix("LOOP_RESULT "))
    assert result["impl"] == "tdrl" and result["frames"] == result["hp"]["total_frames"]
    assert result["seconds"]["update"] > 0 and result["eval_episodes"] == 1


def test_the_table_reports_each_implementation_against_the_reference(tmp_path):
    run = _module("run")

    def result(impl, total):
        seconds = {"total": total, "env": total / 2, "policy": total / 4, "advantage": 0.0,
                   "update": total / 4, "other": 0.0}
        return {"seconds": seconds, "frames": 1000, "eval_return_mean": 500.0, "versions": {impl: "1"}}

    lines = run.table({"tdrl": [result("tdrl", 8.0)], "sb3": [result("sb3", 10.0)]}, "sb3")
    assert lines[2].startswith("| tdrl 1 | 8.0 | 8.00 | 125 | 4.0 s (50%)")
    assert "| 0.80x | 500.0 |" in lines[2] and "| 1.00x |" in lines[3]
    doc = tmp_path / "doc.md"
    doc.write_text("a\n<!-- interleave:loop-ppo_cartpole -->\nold\n<!-- /interleave:loop-ppo_cartpole -->\nb\n")
    run.write_section(doc, "loop-ppo_cartpole", "\n".join(lines))
    assert "old" not in doc.read_text() and "| tdrl 1 |" in doc.read_text()
