"""Two runs with the same seed are the same run (initial weights included)."""

from __future__ import annotations

import torch

from tdrl.trainers.algorithms.configs import compose_run_config
from tdrl.trainers.checkpoint import load_checkpoint
from tdrl.trainers.run import train_run

TINY = ["collector.frames_per_batch=256", "collector.total_frames=512", "trainer.minibatch_size=128",
        "env.num_envs=2", "trainer.num_epochs=1", "eval.episodes=1", "eval.max_steps=20", "eval.interval=0",
        "logger.tensorboard=false", "trainer.timing_print_interval=null"]


def _weights(run_dir):
    return load_checkpoint(run_dir / "checkpoint.pt")["loss_module"]


def test_same_seed_same_weights_other_seed_other_weights(tmp_path):
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        torch.manual_seed(1000 + len(name) * ord(name))  # whatever the global RNG held before
        train_run(compose_run_config([*TINY, f"seed={seed}", f"run_dir={tmp_path / name}"]), progress_bar=False)
    a, b, c = (_weights(tmp_path / n) for n in "abc")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)
