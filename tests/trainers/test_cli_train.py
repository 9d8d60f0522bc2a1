"""The ``tdrl`` command end to end, in subprocesses with tiny budgets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.integration

TINY = [
    "collector.frames_per_batch=256", "trainer.minibatch_size=128", "env.num_envs=2", "trainer.num_epochs=2",
    "eval.episodes=1", "eval.max_steps=50", "trainer.save_interval=256",
]


def _tdrl(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tdrl.trainers.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_help_lists_algorithms_presets_and_groups():
    out = _tdrl("train", "--help")
    assert out.returncode == 0
    for word in ("ppo", "a2c", "ppo_cartpole", "ppo_pendulum", "collector:", "frames_per_batch", "CartPole-v1"):
        assert word in out.stdout


def test_bad_override_fails_before_any_env_starts(tmp_path):
    out = _tdrl("train", "collector.frame_per_batch=64", f"run_dir={tmp_path / 'run'}")
    assert out.returncode != 0
    assert "Did you mean collector.'frames_per_batch'" in out.stderr and "Valid keys" in out.stderr
    assert not (tmp_path / "run").exists()


def test_train_eval_plot(tmp_path):
    run = tmp_path / "run"
    out = _tdrl("train", *TINY, "collector.total_frames=512", f"run_dir={run}", "--no-progress")
    assert out.returncode == 0, out.stderr
    for name in ("config.yaml", "checkpoint.pt", "summary.json", "learning_curve.png", "logs/scalars/r_episode.csv"):
        assert (run / name).exists(), name
    summary = json.loads((run / "summary.json").read_text())
    assert summary["frames"] == 512 and set(summary["time_per_phase_s"]) >= {"collect", "optim", "eval"}
    ev = _tdrl("eval", str(run), "--episodes", "2", "--json")
    assert ev.returncode == 0, ev.stderr
    assert len(json.loads(ev.stdout.splitlines()[-1])["returns"]) == 2
    png = tmp_path / "both.png"
    pl = _tdrl("plot", str(run), str(run), "--out", str(png))
    assert pl.returncode == 0, pl.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_resume_after_kill_9_continues_from_checkpoint(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tdrl.trainers.cli", "train", *TINY, "collector.total_frames=3072", f"run_dir={run}",
         "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    ckpt = run / "checkpoint.pt"
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and not (run / "checkpoint.pt.prev").exists():
            assert proc.poll() is None, "training ended before it could be killed"
            time.sleep(0.2)
        assert ckpt.exists(), "no checkpoint within the time limit"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    saved = torch.load(ckpt, weights_only=True)["state"]["state"]["collected_frames"]
    assert 256 <= saved < 3072
    out = _tdrl("resume", str(run), "--no-progress")
    assert out.returncode == 0, out.stderr
    assert f"at {saved} frames" in out.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert summary["frames"] == 3072


@pytest.mark.integration
def test_train_runs_a_torchrl_style_hydra_yaml(tmp_path):
    """`tdrl train --config-path --config-name` on a TorchRL-style trainer YAML (a Hydra defaults list)."""
    yaml_dir = Path(__file__).parent / "configs" / "yaml"
    out = subprocess.run(
        [sys.executable, "-m", "tdrl.trainers.cli", "train", "--config-path", str(yaml_dir),
         "--config-name", "ppo_cartpole", f"logger.log_dir={tmp_path}"],
        capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "done: PPOTrainer, 256 frames" in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "tdrl.trainers.cli", "train", "--config-path", str(yaml_dir),
         "--config-name", "ppo_cartpole", "loss.clip_epsilonn=0.1"],
        capture_output=True, text=True, timeout=600,
    )
    assert bad.returncode == 2 and "did you mean clip_epsilon" in bad.stderr
