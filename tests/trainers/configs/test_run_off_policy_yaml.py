"""SAC and DQN trainer YAMLs (TorchRL layout) build tdrl trainers and train for a tiny budget."""

from __future__ import annotations

import pathlib

import pytest

from tdrl.objectives import DQNLoss, HardUpdate, SACLoss, SoftUpdate
from tdrl.trainers.algorithms import DQNTrainer, SACTrainer
from tdrl.trainers.algorithms.configs import compose_config, run_config

YAML_DIR = pathlib.Path(__file__).parents[3] / "examples" / "configs"
_TINY = ["collector.total_frames=100", "trainer.total_frames=100", "trainer.optim_steps_per_batch=2"]


@pytest.mark.parametrize(
    ("name", "trainer_cls", "loss_cls", "updater_cls"),
    [("sac_pendulum", SACTrainer, SACLoss, SoftUpdate), ("dqn_cartpole", DQNTrainer, DQNLoss, HardUpdate)],
)
def test_off_policy_yaml_trains(tmp_path: pathlib.Path, name: str, trainer_cls: type, loss_cls: type,
                                updater_cls: type) -> None:
    cfg = compose_config(YAML_DIR, name, [f"logger.log_dir={tmp_path}", *_TINY])
    trainer = run_config(cfg)
    assert isinstance(trainer, trainer_cls)
    assert isinstance(trainer.loss_module, loss_cls)
    assert isinstance(trainer.target_net_updater, updater_cls)
    before = [p.detach().clone() for p in trainer.loss_module.parameters()]
    trainer.train()
    assert trainer.collected_frames == 100
    assert any(not b.equal(a) for b, a in zip(before, trainer.loss_module.parameters()))


def test_sac_sizes_and_bounds_come_from_the_env(tmp_path: pathlib.Path) -> None:
    cfg = compose_config(YAML_DIR, "sac_pendulum", [f"logger.log_dir={tmp_path}", *_TINY])
    run_config(cfg).collector.shutdown()
    # Pendulum: 3 observations, 1 torque in [-2, 2]; Q(s, a) reads both
    assert (cfg.networks.policy_network.in_features, cfg.networks.policy_network.out_features) == (3, 2)
    assert (cfg.networks.qvalue_network.in_features, cfg.networks.qvalue_network.out_features) == (4, 1)
    assert (list(cfg.models.policy_model.low), list(cfg.models.policy_model.high)) == ([-2.0], [2.0])


def test_dqn_trainer_shares_one_q_network_and_anneals_epsilon(tmp_path: pathlib.Path) -> None:
    cfg = compose_config(YAML_DIR, "dqn_cartpole", [f"logger.log_dir={tmp_path}", *_TINY])
    trainer = run_config(cfg)
    q_net = trainer.loss_module.value_network
    policy = trainer.collector.policy
    assert policy[0] is q_net, "the collector must run the trained Q-network itself"
    greedy = trainer.greedy_module
    eps_before = float(greedy.eps)
    trainer.train()
    assert float(greedy.eps) < eps_before
