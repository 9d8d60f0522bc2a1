"""``tdrl train ... collector=ray``: the same run folder, metrics, checkpoints and resume as a local run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tdrl.record import read_scalars
from tdrl.trainers.algorithms.configs import ConfigError, compose_run_config
from tdrl.trainers.checkpoint import load_checkpoint

pytest.importorskip("ray")

TINY = ["collector.frames_per_batch=256", "trainer.minibatch_size=128", "env.num_envs=2", "trainer.num_epochs=1",
        "eval.episodes=1", "eval.max_steps=50", "trainer.save_interval=256", "collector.total_frames=512"]
RAY = ["collector=ray", "collector.num_collectors=2", "ray.num_cpus_per_collector=0.5"]


def _tdrl(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tdrl.trainers.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_collector_ray_composes_and_checks_the_split():
    cfg = compose_run_config(["algo=ppo", "collector=ray", "collector.num_collectors=2", "ray.address=auto"])
    assert (cfg.collector.backend, cfg.collector.num_collectors, cfg.ray.address) == ("ray", 2, "auto")
    with pytest.raises(ConfigError, match="multiple of collector.num_collectors"):
        compose_run_config(["algo=ppo", "collector=ray", "collector.num_collectors=3"])
    with pytest.raises(ConfigError, match="backend"):
        compose_run_config(["algo=ppo", "collector=rya"])


@pytest.mark.integration
@pytest.mark.timeout(1200)
def test_train_on_ray_writes_a_local_runs_folder_and_resumes(tmp_path):
    local, remote = tmp_path / "local", tmp_path / "ray"
    out = _tdrl("train", *TINY, f"run_dir={local}", "--no-progress")
    assert out.returncode == 0, out.stderr
    out = _tdrl("train", *TINY, *RAY, f"run_dir={remote}", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert {p.name for p in local.iterdir()} == {p.name for p in remote.iterdir()}
    assert sorted(read_scalars(remote / "logs")) == sorted(read_scalars(local / "logs"))
    state = load_checkpoint(remote / "checkpoint.pt")
    assert state["state"]["collected_frames"] == 512
    assert {"collector0", "collector1"} <= set(state["collector"])
    config = (remote / "config.yaml").read_text()
    assert "backend: ray" in config
    (remote / "config.yaml").write_text(config.replace("total_frames: 512", "total_frames: 1024"))
    out = _tdrl("resume", str(remote), "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "at 512 frames" in out.stdout
    assert json.loads((remote / "summary.json").read_text())["frames"] == 1024
    rows = [step for step, _ in read_scalars(remote / "logs")["r_training"]]
    assert rows == [256, 512, 768, 1024]


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(3600)
def test_ppo_solves_cartpole_through_collector_ray(tmp_path):
    run = tmp_path / "run"
    out = _tdrl("train", "algo=ppo", *RAY, f"run_dir={run}", "--no-progress", timeout=3000)
    assert out.returncode == 0, out.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["eval_return_mean"] >= 475, summary
