"""MuJoCo (gymnasium) and dm_control presets train a few hundred frames end to end where installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tdrl.trainers.algorithms.configs import compose_run_config
from tdrl.trainers.run import evaluate_run, train_run

TINY = ["collector.frames_per_batch=100", "collector.total_frames=300", "replay.init_random_frames=100",
        "trainer.optim_steps_per_batch=4", "network.num_cells=[32]", "eval.episodes=1", "eval.max_steps=50",
        "eval.interval=0", "trainer.save_interval=100", "replay.buffer_size=1000"]


def _require_gym_mujoco() -> None:
    pytest.importorskip("mujoco", reason="MuJoCo is not installed (pip install 'gymnasium[mujoco]')")
    import gymnasium

    try:
        gymnasium.make("HalfCheetah-v5").close()
    except Exception as err:  # gymnasium's MuJoCo envs also need imageio
        pytest.skip(f"gymnasium cannot make HalfCheetah-v5 here: {err}")


def _require_dm_control() -> None:
    pytest.importorskip("dm_control", reason="dm_control is not installed (the `dmc` extra)")


@pytest.mark.parametrize("overrides,require", [
    (["algo=sac", "env=HalfCheetah-v5"], _require_gym_mujoco),
    (["algo=sac", "env=dmc:cheetah/run"], _require_dm_control),
    (["algo=td3", "env=dmc:cheetah/run"], _require_dm_control),
], ids=["sac_halfcheetah", "sac_cheetah_run", "td3_cheetah_run"])
def test_mujoco_preset_trains_a_few_hundred_frames(overrides, require, tmp_path):
    require()
    cfg = compose_run_config([*overrides, f"run_dir={tmp_path / 'run'}", *TINY])
    assert cfg.eval.max_steps == 50 and cfg.trainer.log_interval == 1000  # the MuJoCo preset, not the Pendulum one
    summary = train_run(cfg, progress_bar=False)
    assert summary["frames"] == 300 and summary["optim_steps"] == 3 * 4
    mean, _, returns = evaluate_run(tmp_path / "run", episodes=1)
    assert len(returns) == 1 and mean == returns[0]


def test_help_lists_the_mujoco_and_offline_presets():
    out = subprocess.run([sys.executable, "-m", "tdrl.trainers.cli", "train", "--help"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0
    for name in ("sac_halfcheetah", "sac_cheetah_run", "td3_cheetah_run", "cql_pendulum", "iql_pendulum",
                 "cql_cartpole", "iql_cartpole"):
        assert name in out.stdout
    assert "dmc:DOMAIN/TASK" in out.stdout and "dataset.path=" in out.stdout
