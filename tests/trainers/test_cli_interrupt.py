"""Ctrl-C during ``tdrl train`` and ``tdrl resume`` of a finished run, in subprocesses with tiny budgets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tdrl.trainers.checkpoint import load_checkpoint

pytestmark = pytest.mark.integration

TINY = ["collector.frames_per_batch=256", "trainer.minibatch_size=128", "env.num_envs=2", "eval.episodes=2",
        "eval.interval_episodes=1", "eval.max_steps=50", "trainer.save_interval=100000"]


def _start(run: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tdrl.trainers.cli", "train", *TINY, *extra, f"run_dir={run}",
                             "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no {path} within {timeout} s"
        time.sleep(0.1)


def test_ctrl_c_finishes_the_step_and_writes_checkpoint_summary_and_plot(tmp_path):
    run = tmp_path / "run"
    proc = _start(run, "collector.total_frames=1000000")
    _wait_for(run / "logs" / "scalars" / "r_training.csv", proc)  # training has started
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert f"resume with: tdrl resume {run}" in out
    summary = json.loads((run / "summary.json").read_text())
    assert summary["interrupted"] is True and 256 <= summary["frames"] < 1_000_000
    assert summary["eval_episodes"] == 1  # the brief evaluation of an interrupted run
    assert load_checkpoint(run / "checkpoint.pt")["state"]["collected_frames"] == summary["frames"]
    assert (run / "learning_curve.png").exists()


def test_a_second_ctrl_c_exits_at_once(tmp_path):
    run = tmp_path / "run"
    proc = _start(run, "collector.total_frames=1000000", "eval.episodes=1000", "eval.interval_episodes=1000")
    _wait_for(run / "logs" / "scalars" / "r_training.csv", proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted; exited at once" in err and "Traceback" not in err
    assert not (run / "summary.json").exists()


def test_resume_of_a_finished_run_says_so_and_does_nothing(tmp_path):
    run = tmp_path / "run"
    proc = _start(run, "collector.total_frames=256")
    out, err = proc.communicate(timeout=400)
    assert proc.returncode == 0, err[-3000:]
    before = (run / "summary.json").read_text(), (run / "checkpoint.pt").stat().st_mtime_ns
    res = subprocess.run([sys.executable, "-m", "tdrl.trainers.cli", "resume", str(run)], capture_output=True,
                         text=True, timeout=400)
    assert res.returncode == 0, res.stderr
    assert f"{run} is finished: 256 of 256 frames" in res.stdout
    assert "frames/s" not in res.stdout and "100%" not in res.stdout + res.stderr and "eval return:" not in res.stdout
    assert ((run / "summary.json").read_text(), (run / "checkpoint.pt").stat().st_mtime_ns) == before
    # no eval.interval: no best.pt, and `tdrl eval` (best by default) says it evaluated the last policy
    ev = subprocess.run([sys.executable, "-m", "tdrl.trainers.cli", "eval", str(run), "--episodes", "1", "--json"],
                        capture_output=True, text=True, timeout=400)
    assert ev.returncode == 0, ev.stderr
    assert "last policy (checkpoint.pt, frame 256; the run kept no best.pt)" in ev.stdout
    assert "best" not in ev.stdout.splitlines()[0].split(":", 1)[1].replace("no best.pt", "")
    assert json.loads(ev.stdout.splitlines()[-1])["policy"] == "last"
