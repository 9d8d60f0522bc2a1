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

from tdrl.record import read_scalars
from tdrl.trainers.checkpoint import load_checkpoint

pytestmark = pytest.mark.integration

TINY = [
    "collector.frames_per_batch=256", "trainer.minibatch_size=128", "env.num_envs=2", "trainer.num_epochs=2",
    "eval.episodes=1", "eval.max_steps=50", "trainer.save_interval=256",
]


def _tdrl(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tdrl.trainers.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _kill_9_when(cmd: list[str], *, ready: Path, timeout: float = 180) -> None:
    """Runs ``cmd`` and SIGKILLs it as soon as ``ready`` exists."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not ready.exists():
            assert proc.poll() is None, f"the command ended before {ready.name} appeared"
            time.sleep(0.2)
        assert ready.exists(), f"no {ready.name} within {timeout} s"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


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


@pytest.mark.parametrize(("override", "message"), [
    ("optim.lr=fast", "optim.lr=fast: expected a float, got 'fast'"),
    ("optim.lr=abc", "optim.lr=abc: expected a float, got 'abc'"),
    ("collector.frames_per_batch=1.5", "collector.frames_per_batch=1.5: expected an integer, got 1.5"),
    ("trainer.progress_bar=maybe", "trainer.progress_bar=maybe: expected a boolean, got 'maybe'"),
    ("env=Cartpole-v1", "env.name=Cartpole-v1: no gymnasium env has this id. Did you mean 'CartPole-v1'"),
    ("optim.lr=-1", "optim.lr must be >= 0.0, got -1.0"),
    ("env.num_envs=3", "collector.frames_per_batch (256) must be a multiple of env.num_envs (3)"),
    ("optim.lrr=0.1", "Did you mean optim.'lr'?"),
])
def test_bad_value_fails_before_the_run_folder_exists(tmp_path, override, message):
    run = tmp_path / "run"
    out = _tdrl("train", override, f"run_dir={run}", "--no-progress", timeout=120)
    assert out.returncode == 2, out.stdout[-500:]
    assert message in out.stderr, out.stderr
    assert not run.exists() and not list(tmp_path.iterdir())


def test_a_build_failure_leaves_no_run_folder(tmp_path):
    # valid config, unbuildable run: dqn on a continuous-action env fails while the networks are built
    run = tmp_path / "run"
    out = _tdrl("train", "algo=dqn", "env=Pendulum-v1", f"run_dir={run}", "--no-progress", timeout=120)
    assert out.returncode == 2 and "algo=dqn needs a discrete" in out.stderr, out.stderr
    assert not run.exists()


PHASES = {"collect", "optim", "log", "eval", "checkpoint"}


def _rows(run: Path, name: str) -> list[int]:
    return [step for step, _ in read_scalars(run / "logs")[name]]


def test_train_eval_plot(tmp_path):
    run = tmp_path / "run"
    out = _tdrl("train", *TINY, "collector.total_frames=512", "eval.interval=256", "eval.interval_episodes=1",
                "trainer.timing_print_interval=256", f"run_dir={run}", "--no-progress")
    assert out.returncode == 0, out.stderr
    for name in ("config.yaml", "checkpoint.pt", "best.pt", "summary.json", "learning_curve.png",
                 "logs/scalars/r_episode.csv"):
        assert (run / name).exists(), name
    summary = json.loads((run / "summary.json").read_text())
    assert summary["frames"] == 512 and set(summary["time_per_phase_s"]) == PHASES
    # The per-phase times: printed every 256 frames, logged (time/trainer/<phase>), and in the summary.
    printed = [line for line in out.stdout.splitlines() if line.startswith("time: ")]
    assert len(printed) == 2 and all(phase in printed[1] for phase in PHASES)
    assert "time per phase: " in out.stdout
    for phase in PHASES:  # at 256 frames, "checkpoint" is best.pt's write (the trainer's comes after the log)
        assert _rows(run, f"time/trainer/{phase}") == [256, 512], phase
    ev = _tdrl("eval", str(run), "--episodes", "2", "--json")
    assert ev.returncode == 0, ev.stderr
    assert len(json.loads(ev.stdout.splitlines()[-1])["returns"]) == 2
    assert "best policy (best.pt, evaluated at frame " in ev.stdout  # which policy, from which frame
    png = tmp_path / "both.png"
    pl = _tdrl("plot", str(run), str(run), "--out", str(png))
    assert pl.returncode == 0, pl.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_timing_log_and_print_can_be_turned_off(tmp_path):
    run = tmp_path / "run"
    out = _tdrl("train", *TINY, "collector.total_frames=256", "trainer.log_timings=false",
                "trainer.timing_print_interval=null", f"run_dir={run}", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert not any(line.startswith("time: ") for line in out.stdout.splitlines())
    assert not (run / "logs" / "scalars" / "time").exists()
    assert set(json.loads((run / "summary.json").read_text())["time_per_phase_s"]) >= {"collect", "optim"}


def test_resume_after_kill_9_continues_from_checkpoint(tmp_path):
    run = tmp_path / "run"
    ckpt = run / "checkpoint.pt"
    _kill_9_when([sys.executable, "-m", "tdrl.trainers.cli", "train", *TINY, "collector.total_frames=3072",
                  f"run_dir={run}", "--no-progress"], ready=run / "checkpoint.pt.prev")
    saved = torch.load(ckpt, weights_only=True)["state"]["state"]["collected_frames"]
    assert 256 <= saved < 3072
    out = _tdrl("resume", str(run), "--no-progress")
    assert out.returncode == 0, out.stderr
    assert f"at {saved} frames" in out.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert summary["frames"] == 3072
    # Rows the killed run logged after its checkpoint were dropped: one row per batch, none twice or lost.
    for name in ("r_training", "optim_steps", "wall_time"):
        assert _rows(run, name) == list(range(256, 3073, 256)), name


SLOW_SAVE = """
import pathlib, sys, time, torch
import tdrl.trainers.checkpoint as ckpt
marker = pathlib.Path(sys.argv[1])
real_save, real_write, frames, calls = torch.save, ckpt.write_file, [], []
def save(obj, f, *args, **kwargs):
    if isinstance(obj, dict) and "collector" in obj.get("state", {}):
        frames.append(obj["state"]["state"]["collected_frames"])
    return real_save(obj, f, *args, **kwargs)
def write_file(file, chunks, nbytes=None):
    if pathlib.Path(file).name == "checkpoint.pt.tmp":
        calls.append(1)
        if len(calls) == 3:  # the third trainer checkpoint: write half of it, then hang until killed
            data = b"".join(bytes(c) for c in chunks)
            with open(file, "wb") as f:
                f.write(data[: len(data) // 2])
                f.flush()
            marker.write_text(str(frames[-1]))
            time.sleep(600)
    return real_write(file, chunks, nbytes=nbytes)
torch.save, ckpt.write_file = save, write_file
from tdrl.trainers.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_kill_during_checkpoint_write_resumes_from_the_previous_complete_one(tmp_path):
    run, marker = tmp_path / "run", tmp_path / "writing"
    _kill_9_when([sys.executable, "-c", SLOW_SAVE, str(marker), "train", *TINY, "collector.total_frames=2048",
                  f"run_dir={run}", "--no-progress"], ready=marker)
    assert marker.read_text() == "768"
    partial = run / "checkpoint.pt.tmp"
    assert partial.exists() and partial.stat().st_size < (run / "checkpoint.pt").stat().st_size
    state = load_checkpoint(run / "checkpoint.pt")
    assert state["state"]["collected_frames"] == 512
    assert len(repr(state["logger"])) < 4000  # counters and file sizes, not the logged points
    assert "replay_buffer" in state["modules"]
    out = _tdrl("resume", str(run), "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "at 512 frames" in out.stdout
    assert json.loads((run / "summary.json").read_text())["frames"] == 2048
    for name in ("r_training", "optim_steps", "wall_time"):
        assert _rows(run, name) == list(range(256, 2049, 256)), name
    assert not partial.exists()  # the next checkpoint's write replaced it


def test_resume_without_a_complete_checkpoint_fails_clearly(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text((Path(__file__).parents[2] / "src/tdrl/trainers/presets/ppo_cartpole.yaml").read_text())
    (run / "checkpoint.pt.tmp").write_bytes(b"half a checkpoint")
    out = _tdrl("resume", str(run), "--no-progress")
    assert out.returncode == 2
    assert "no checkpoint at" in out.stderr and "checkpoint.pt" in out.stderr


@pytest.mark.integration
def test_train_runs_a_torchrl_style_hydra_yaml(tmp_path):
    """`tdrl train --config-path --config-name` on a TorchRL-style trainer YAML (a Hydra defaults list)."""
    yaml_dir = Path(__file__).parents[2] / "examples" / "configs"
    out = subprocess.run(
        [sys.executable, "-m", "tdrl.trainers.cli", "train", "--config-path", str(yaml_dir),
         "--config-name", "ppo_cartpole", f"logger.log_dir={tmp_path}", f"run_dir={tmp_path / 'run'}",
         "eval.episodes=2", "eval.max_steps=50"],
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


@pytest.mark.integration
def test_a_torchrl_yaml_run_writes_the_same_run_folder_and_evals_resumes_plots(tmp_path):
    """A TorchRL-format run gets config.yaml, logs, checkpoint.pt, summary.json and a plot, like a preset run."""
    yaml_dir = Path(__file__).parents[2] / "examples" / "configs"
    run = tmp_path / "run"
    out = _tdrl("train", "--config-path", str(yaml_dir), "--config-name", "ppo_cartpole", f"logger.log_dir={tmp_path}",
                f"run_dir={run}", "eval.episodes=2", "eval.max_steps=50", "eval.interval=128",
                "eval.interval_episodes=1", "--no-progress")
    assert out.returncode == 0, out.stderr[-2000:]
    for name in ("config.yaml", "checkpoint.pt", "best.pt", "summary.json", "learning_curve.png",
                 "logs/scalars/r_training.csv"):
        assert (run / name).exists(), name
    summary = json.loads((run / "summary.json").read_text())
    assert summary["algo"] == "ppo" and summary["env"] == "CartPole-v1" and summary["frames"] == 256
    assert summary["eval_episodes"] == 2 and summary["optim_steps"] > 0
    assert _rows(run, "r_training")[-1] == 256
    ev = _tdrl("eval", str(run), "--episodes", "2", "--json", "--policy", "last")
    assert ev.returncode == 0, ev.stderr[-2000:]
    assert len(json.loads(ev.stdout.splitlines()[-1])["returns"]) == 2
    assert "last policy (checkpoint.pt, frame " in ev.stdout  # which policy, from which frame
    assert _tdrl("plot", str(run)).returncode == 0
    re = _tdrl("resume", str(run), "--no-progress")  # finished: says so, builds and trains nothing
    assert re.returncode == 0, re.stderr[-2000:]
    assert "is finished: 256 of 256 frames" in re.stdout and "frames/s" not in re.stdout
