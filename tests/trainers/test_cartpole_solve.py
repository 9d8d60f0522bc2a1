"""The default ``tdrl train`` preset solves CartPole-v1 (learning run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tdrl.trainers.checkpoint import load_checkpoint
from tdrl.trainers.config import compose_config
from tdrl.trainers.run import evaluate_run, resume_run, train_run


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_default_preset_solves_cartpole(tmp_path):
    cfg = compose_config([f"run_dir={tmp_path / 'run'}"])
    summary = train_run(cfg, progress_bar=False)
    assert summary["eval_return_mean"] >= 475, summary
    mean, _, _ = evaluate_run(tmp_path / "run", episodes=20)
    assert mean >= 475


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_killed_and_resumed_run_still_solves_cartpole(tmp_path):
    """A run killed (SIGKILL) half way and resumed from its checkpoint solves CartPole like an uninterrupted one."""
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "tdrl.trainers.cli", "train", f"run_dir={run}", "trainer.save_interval=4096",
           "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and proc.poll() is None:
            ckpt = run / "checkpoint.pt"
            if ckpt.exists() and load_checkpoint(ckpt)["state"]["collected_frames"] >= 51200:
                break
            time.sleep(1.0)
        assert proc.poll() is None, "the run ended before it could be killed"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    summary = resume_run(run, progress_bar=False)
    assert summary["frames"] == 102400
    assert summary["eval_return_mean"] >= 475, summary
