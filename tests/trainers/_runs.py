"""Tiny trained run folders shared by the policy, enjoy, export and compare tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: a CartPole PPO run of two 256-frame batches (best.pt after the first), in seconds
TINY_CARTPOLE = [
    "collector.frames_per_batch=256", "collector.total_frames=512", "trainer.minibatch_size=128", "env.num_envs=2",
    "trainer.num_epochs=1", "eval.episodes=1", "eval.max_steps=60", "eval.interval=256", "eval.interval_episodes=1",
    "logger.tensorboard=false",
]


def tdrl(*args: str, timeout: float = 300, cwd: str | os.PathLike | None = None) -> subprocess.CompletedProcess:
    """Runs ``python -m tdrl.trainers.cli ARGS`` and returns the completed process (text output)."""
    return subprocess.run([sys.executable, "-m", "tdrl.trainers.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def train_cartpole(run_dir: Path, *extra: str) -> Path:
    """Trains :data:`TINY_CARTPOLE` into ``run_dir`` with ``tdrl train`` and returns it."""
    out = tdrl("train", *TINY_CARTPOLE, f"run_dir={run_dir}", "--no-progress", *extra)
    assert out.returncode == 0, out.stderr[-2000:]
    return run_dir
