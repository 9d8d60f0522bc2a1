"""The default ``tdrl train`` preset solves CartPole-v1, uninterrupted and when killed and resumed (learning runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tdrl.record import read_scalars
from tdrl.trainers.algorithms.configs import compose_run_config
from tdrl.trainers.checkpoint import load_checkpoint
from tdrl.trainers.run import evaluate_run, resume_run, train_run


def _kill_9_at(cmd: list[str], run, frames: int, timeout: float = 1500) -> int:
    """Runs ``cmd`` and SIGKILLs it once its checkpoint holds at least ``frames``; returns the saved count."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    saved = 0
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None and saved < frames:
            ckpt = run / "checkpoint.pt"
            if ckpt.exists():
                saved = int(load_checkpoint(ckpt)["state"]["collected_frames"])
            time.sleep(0.5)
        assert proc.poll() is None, "the run ended before it could be killed"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    return saved


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_killed_and_resumed_run_solves_cartpole_like_an_uninterrupted_one(tmp_path):
    """Same seed: an uninterrupted run, and a run SIGKILLed mid-way then resumed; both solve CartPole."""
    straight = train_run(compose_run_config([f"run_dir={tmp_path / 'straight'}"]), progress_bar=False)
    assert straight["eval_return_mean"] >= 475, straight
    total = straight["frames"]
    run = tmp_path / "resumed"
    cmd = [sys.executable, "-m", "tdrl.trainers.cli", "train", f"run_dir={run}", "trainer.save_interval=4096",
           "--no-progress"]
    saved = _kill_9_at(cmd, run, frames=total // 2)
    assert 0 < saved < total
    resumed = resume_run(run, progress_bar=False)
    assert resumed["frames"] == total
    assert resumed["eval_return_mean"] >= 475, resumed
    assert abs(resumed["eval_return_mean"] - straight["eval_return_mean"]) <= 25
    # The two learning curves, for docs/cli.md (pytest -s shows them).
    curves = {name: dict(read_scalars(tmp_path / name / "logs")["r_eval_periodic"]) for name in ("straight", "resumed")}
    # Same seed, same run until the kill (the checkpoint restores RNG states, but the envs restart from a
    # reset: the rest matches within noise, not bit for bit).
    before = [f for f in curves["straight"] if f <= saved]
    assert before and all(curves["resumed"][f] == curves["straight"][f] for f in before), curves
    print(f"killed at {saved} frames; periodic eval (frames: uninterrupted / resumed)")
    for frames in sorted(curves["straight"]):
        print(f"{frames}: {curves['straight'][frames]:.1f} / {curves['resumed'].get(frames, float('nan')):.1f}")
    mean, _, _ = evaluate_run(tmp_path / "straight", episodes=20)
    assert mean >= 475
