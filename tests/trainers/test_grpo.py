"""GRPO from the command (``tdrl train algo=grpo``), from parts (the example) and its learning run."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest
import torch
from omegaconf.errors import ConfigKeyError

pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

from tdrl.trainers.algorithms.configs.llm import build_grpo_trainer, compose_grpo_config, train_grpo  # noqa: E402
from tdrl.trainers.algorithms.grpo import GRPOTrainer, total_loss  # noqa: E402
from tdrl.trainers.cli import main  # noqa: E402

EXAMPLE = Path(__file__).parents[2] / "examples" / "llm" / "grpo_tiny.py"
TINY = ["trainer.iterations=2", "model.warmup_steps=3", "task.prompts_per_batch=2", "task.group_size=2"]


def test_config_defaults_overrides_and_errors():
    cfg = compose_grpo_config(["algo=grpo", "loss.cls=DAPO", "loss.clip_epsilon_high=0.28"])
    assert cfg.loss.cls == "DAPO" and cfg.task.name == "sums" and cfg.trainer.iterations == 60
    with pytest.raises(ConfigKeyError, match="iteration"):
        compose_grpo_config(["trainer.iteration=3"])
    with pytest.raises(ValueError, match="loss.cls"):
        compose_grpo_config(["loss.cls=PPO"])



def test_cli_smoke(capsys):
    assert main(["train", "algo=grpo", *TINY]) == 0
    out = capsys.readouterr().out
    assert "done: GRPO on sums, 2 iterations" in out


def test_trainer_history_and_updates():
    # an entropy bonus: a gradient even when a tiny group's rewards are all equal (zero advantage)
    cfg = compose_grpo_config([*TINY, "loss.cls=DAPO", "loss.clip_epsilon_high=0.28", "loss.entropy_coeff=0.01"])
    trainer = build_grpo_trainer(cfg)
    assert isinstance(trainer, GRPOTrainer) and type(trainer.loss_module).__name__ == "DAPO"
    assert float(trainer.loss_module.clip_epsilon_high) == pytest.approx(0.28)
    before = [p.detach().clone() for p in trainer.loss_module.parameters()]
    history = trainer.train()
    assert len(history) == 2 and all(0.0 <= h["reward"] <= 1.0 and h["answers"] == 4 for h in history)
    assert trainer.collected_frames == 8 and len(trainer.replay_buffer) == 0
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.loss_module.parameters()))
    assert trainer.collector.policy_version == 2
    with pytest.raises(KeyError, match="loss_"):
        total_loss({"ESS": torch.tensor(1.0)})


def test_example_smoke(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["grpo_tiny.py", "--iterations", "2", "--warmup-steps", "3",
                                      "--prompts-per-batch", "2", "--group-size", "2"])
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    assert "summary: mean reward first 1 iterations" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.timeout(1800)  # ~70 s of CPU; the wall-clock is several times that on a loaded machine
def test_grpo_raises_the_mean_reward_on_sums():
    """The preset (60 iterations of 128 answers; about 70 s of CPU, one thread): the mean reward of the last
    10 iterations exceeds that of the first 10 by at least 0.05 (examples/llm/README.md states the gain measured
    with the same settings)."""
    summary = train_grpo(compose_grpo_config([]), k=10)
    assert summary["last"] - summary["first"] >= 0.05, summary
