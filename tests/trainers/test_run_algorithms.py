"""Every built-in preset builds and trains for a few batches, and its run folder evaluates and resumes."""

from __future__ import annotations

import json

import pytest

from tdrl.trainers.algorithms.configs import compose_run_config
from tdrl.trainers.run import evaluate_run, resume_run, train_run

TINY = {
    "ppo_pendulum": ["collector.frames_per_batch=128", "collector.total_frames=256", "trainer.minibatch_size=64",
                     "env.num_envs=2", "trainer.num_epochs=1"],
    "a2c_cartpole": ["collector.frames_per_batch=128", "collector.total_frames=256", "trainer.minibatch_size=128",
                     "env.num_envs=2"],
    "reinforce_cartpole": ["collector.frames_per_batch=128", "collector.total_frames=256",
                           "trainer.minibatch_size=128", "env.num_envs=2"],
    "sac_pendulum": ["collector.frames_per_batch=100", "collector.total_frames=300", "replay.init_random_frames=100",
                     "trainer.optim_steps_per_batch=5", "network.num_cells=[32]"],
    "dqn_cartpole": ["collector.frames_per_batch=64", "collector.total_frames=256", "replay.init_random_frames=64",
                     "trainer.optim_steps_per_batch=4", "env.num_envs=2", "replay.batch_size=32"],
    "td3_pendulum": ["collector.frames_per_batch=100", "collector.total_frames=300", "replay.init_random_frames=100",
                     "trainer.optim_steps_per_batch=5", "network.num_cells=[32]"],
    "ddpg_pendulum": ["collector.frames_per_batch=100", "collector.total_frames=300", "replay.init_random_frames=100",
                      "trainer.optim_steps_per_batch=5", "network.num_cells=[32]"],
}


@pytest.mark.parametrize("preset", sorted(TINY))
def test_preset_trains_and_evaluates(preset, tmp_path):
    run = tmp_path / "run"
    overrides = [f"preset={preset}", f"run_dir={run}", "eval.episodes=1", "eval.max_steps=20", "eval.interval=0",
                 "trainer.save_interval=64", *TINY[preset]]
    summary = train_run(compose_run_config(overrides), progress_bar=False)
    total = compose_run_config(overrides).collector.total_frames
    assert summary["frames"] == total
    assert json.loads((run / "summary.json").read_text())["algo"] == preset.split("_")[0]
    mean, _, returns = evaluate_run(run, episodes=1)
    assert len(returns) == 1 and mean == returns[0]


def test_resume_of_a_finished_run_keeps_its_frames(tmp_path):
    run = tmp_path / "run"
    overrides = ["preset=dqn_cartpole", f"run_dir={run}", "eval.episodes=1", "eval.max_steps=20",
                 *TINY["dqn_cartpole"]]
    train_run(compose_run_config(overrides), progress_bar=False)
    summary = resume_run(run, progress_bar=False)
    assert summary["frames"] == 256
