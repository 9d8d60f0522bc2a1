"""End to end: a TorchRL-style PPO YAML composed with Hydra's compose API trains a tdrl PPOTrainer."""

from __future__ import annotations

import pathlib

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from tdrl.collectors import Collector
from tdrl.objectives import ClipPPOLoss
from tdrl.trainers.algorithms import PPOTrainer
from tdrl.trainers.algorithms.configs import ConfigValidationError, compose_config, run_config

YAML_DIR = pathlib.Path(__file__).parents[3] / "examples" / "configs"


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(YAML_DIR), version_base="1.3"):
        return compose(config_name="ppo_cartpole", overrides=list(overrides))


def test_ppo_cartpole_yaml_trains(tmp_path: pathlib.Path) -> None:
    cfg = _compose(f"logger.log_dir={tmp_path}")
    trainer = run_config(cfg)
    assert isinstance(trainer, PPOTrainer)
    assert isinstance(trainer.loss_module, ClipPPOLoss)
    assert isinstance(trainer.collector, Collector)
    # sizes came from CartPole's specs: 4 observations, 2 actions (logits), 1 value
    assert cfg.networks.policy_network.in_features == 4
    assert cfg.networks.policy_network.out_features == 2
    assert cfg.networks.value_network.out_features == 1
    before = [p.detach().clone() for p in trainer.loss_module.actor_network.parameters()]
    trainer.train()
    assert trainer.collected_frames >= 256
    after = list(trainer.loss_module.actor_network.parameters())
    assert any(not b.equal(a) for b, a in zip(before, after))
    assert any(tmp_path.rglob("*.csv")), "the CSV logger wrote nothing"


def test_plain_hydra_instantiate_with_explicit_sizes(tmp_path: pathlib.Path) -> None:
    cfg = _compose(
        f"logger.log_dir={tmp_path}", "networks.policy_network.in_features=4",
        "networks.policy_network.out_features=2", "networks.value_network.in_features=4",
        "networks.value_network.out_features=1",
        "trainer.hooks=[{_target_:tdrl.trainers.algorithms.configs.hooks.make_log_scalar,"
        "key:[next,done],logname:done_rate}]",
    )
    trainer = instantiate(cfg.trainer)
    assert isinstance(trainer, PPOTrainer)
    # a hook listed in the config is registered where it belongs (LogScalar: before logging)
    hooks = [op for op, _ in trainer._ops["pre_steps_log"] if getattr(op, "logname", None) == "done_rate"]
    assert len(hooks) == 1 and hooks[0].key == ("next", "done")
    policy = trainer.collector.policy
    actor = trainer.loss_module.actor_network
    # two objects (one per interpolation) that start with the same weights
    for (name, p), (_, q) in zip(sorted(policy.named_parameters()), sorted(actor.named_parameters())):
        assert p.equal(q), name
    trainer.collector.shutdown()


def test_typo_in_override_is_explained(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigValidationError, match=r"loss\.clip_epsilonn: unknown key; did you mean clip_epsilon\?"):
        compose_config(YAML_DIR, "ppo_cartpole", [f"logger.log_dir={tmp_path}", "loss.clip_epsilonn=0.1"])


def test_torchrl_layout_pendulum_yaml_with_transforms_and_multi_collector(tmp_path: pathlib.Path) -> None:
    # The YAML keeps TorchRL's full-size budget; the run is shrunk with command-line overrides only.
    cfg = compose_config(YAML_DIR, "ppo_pendulum_transforms", [
        f"logger.log_dir={tmp_path}", "collector.num_workers=1", "collector.frames_per_batch=64",
        "collector.total_frames=128", "trainer.total_frames=128", "replay_buffer.storage.max_size=64",
        "replay_buffer.batch_size=32", "trainer.num_epochs=1", "trainer.progress_bar=false",
    ])
    trainer = run_config(cfg)
    trainer.train()
    assert trainer.collected_frames == 128
    assert any(tmp_path.rglob("*.csv"))
