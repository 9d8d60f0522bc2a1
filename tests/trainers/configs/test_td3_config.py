"""TD3's config builds TorchRL's delayed actor update: a TD3OptimizationStepper over actor and critic parameters."""

from __future__ import annotations

import pathlib

import pytest
import torch
from hydra.utils import instantiate

from tdrl.trainers.algorithms import TD3OptimizationStepper, TD3Trainer
from tdrl.trainers.algorithms.configs import compose_config

YAML_DIR = pathlib.Path(__file__).parents[3] / "examples" / "configs"


def _trainer(tmp_path: pathlib.Path, *overrides: str) -> TD3Trainer:
    cfg = compose_config(YAML_DIR, "td3_pendulum", [f"logger.log_dir={tmp_path}", *overrides])
    return instantiate(cfg.trainer)


def _ids(params) -> set[int]:
    return {id(p) for p in params}


def test_single_optimizer_is_instantiated_for_actor_and_critics(tmp_path: pathlib.Path) -> None:
    trainer = _trainer(tmp_path)
    stepper, loss = trainer.optimization_stepper, trainer.loss_module
    assert isinstance(trainer, TD3Trainer) and isinstance(stepper, TD3OptimizationStepper)
    assert stepper.policy_update_delay == 2 and trainer.optimizer is None
    actor, critic = stepper.optimizer_actor, stepper.optimizer_critic
    assert isinstance(actor, torch.optim.Adam) and isinstance(critic, torch.optim.Adam) and actor is not critic
    assert actor.defaults["lr"] == critic.defaults["lr"] == 3e-4
    assert _ids(actor.param_groups[0]["params"]) == _ids(loss.actor_network_params.values(True, True))
    assert _ids(critic.param_groups[0]["params"]) == _ids(loss.qvalue_network_params.values(True, True))
    trainer.collector.shutdown()


def test_actor_moves_every_second_step_critics_every_step(tmp_path: pathlib.Path) -> None:
    trainer = _trainer(tmp_path)  # 2 batches x 2 optimisation steps, policy_update_delay 2
    loss = trainer.loss_module
    tracked = {"actor": loss.actor_network_params, "critic": loss.qvalue_network_params}
    state = {name: [p.detach().clone() for p in params.values(True, True)] for name, params in tracked.items()}
    moved: dict[str, list[bool]] = {name: [] for name in tracked}

    def record() -> None:
        for name, params in tracked.items():
            now = [p.detach().clone() for p in params.values(True, True)]
            moved[name].append(any(not torch.equal(b, a) for b, a in zip(state[name], now)))
            state[name] = now

    trainer.register_op("post_optim", record)
    trainer.train()
    assert moved["actor"] == [False, True, False, True]
    assert moved["critic"] == [True] * 4


def test_separate_optimizers_delay_and_gamma(tmp_path: pathlib.Path) -> None:
    trainer = _trainer(tmp_path, "+optimizer@trainer.optimizer_actor=sgd", "trainer.optimizer_actor.lr=0.01",
                       "+optimizer@trainer.optimizer_critic=adam", "trainer.optimizer_critic.lr=0.002",
                       "trainer.policy_update_delay=3", "trainer.value_estimator_gamma=0.9")
    stepper = trainer.optimization_stepper
    assert stepper.policy_update_delay == 3
    assert isinstance(stepper.optimizer_actor, torch.optim.SGD) and stepper.optimizer_actor.defaults["lr"] == 0.01
    assert isinstance(stepper.optimizer_critic, torch.optim.Adam) and stepper.optimizer_critic.defaults["lr"] == 0.002
    assert float(trainer.loss_module._gamma()) == pytest.approx(0.9)
    trainer.collector.shutdown()


def test_one_of_the_two_optimizers_is_an_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(Exception, match="both optimizer_actor and optimizer_critic"):
        _trainer(tmp_path, "+optimizer@trainer.optimizer_actor=sgd", "trainer.optimizer_actor.lr=0.01")
