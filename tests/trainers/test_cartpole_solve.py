"""The default ``tdrl train`` preset solves CartPole-v1 (learning run)."""

from __future__ import annotations

import pytest

from tdrl.trainers.config import compose_config
from tdrl.trainers.run import evaluate_run, train_run


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_default_preset_solves_cartpole(tmp_path):
    cfg = compose_config([f"run_dir={tmp_path / 'run'}"])
    summary = train_run(cfg, progress_bar=False)
    assert summary["eval_return_mean"] >= 475, summary
    mean, _, _ = evaluate_run(tmp_path / "run", episodes=20)
    assert mean >= 475
