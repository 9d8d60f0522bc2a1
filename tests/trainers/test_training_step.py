"""The explicit training step: the algorithm's parts run in order whatever was registered; typed hook points."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import torch

from tdrl.trainers import Trainer
from tdrl.trainers.algorithms.configs import compose_run_config
from tdrl.trainers.run_parts import build_parts
from tdrl.trainers.trainer import HOOK_DESTINATIONS, HookPoint

PPO = ["collector.frames_per_batch=64", "collector.total_frames=128", "trainer.minibatch_size=32", "env.num_envs=2",
       "trainer.num_epochs=2", "trainer.progress_bar=false", "network.num_cells=[8]"]
DQN = ["algo=dqn", "collector.frames_per_batch=32", "collector.total_frames=96", "replay.init_random_frames=32",
       "trainer.optim_steps_per_batch=3", "env.num_envs=2", "replay.batch_size=8", "trainer.progress_bar=false",
       "network.num_cells=[8]"]


def test_hook_points_are_an_enum_of_torchrl_s_18_names():
    assert [p.value for p in HookPoint] == list(HOOK_DESTINATIONS) and len(HookPoint) == 18
    params = inspect.signature(Trainer.register_op).parameters
    assert list(params)[:3] == ["self", "dest", "op"]


def test_ppo_step_needs_no_registered_hook_and_a_hook_sees_this_epoch_s_advantages():
    trainer = build_parts(compose_run_config(PPO)).trainer
    # nothing of the algorithm is a registered op: only the logging hooks are
    assert trainer._ops["pre_epoch"] == [] and trainer._ops["process_optim_batch"] == []
    seen: list[tuple[int, float]] = []

    def check(batch):  # runs after the advantages were written and the buffer filled
        assert "advantage" in batch.keys() and "value_target" in batch.keys()
        stored = trainer.replay_buffer[:]
        assert len(trainer.replay_buffer) == 64 and torch.equal(stored["advantage"], batch.reshape(-1)["advantage"])
        seen.append((trainer.optim_count, float(batch["advantage"].abs().sum())))

    minibatches: list[int] = []
    trainer.register_op(HookPoint.PRE_EPOCH, check)
    trainer.register_op("process_optim_batch", lambda mb: minibatches.append(mb.numel()))
    trainer.train()
    assert [count for count, _ in seen] == [0, 2, 4, 6]  # 2 batches x 2 epochs, 2 minibatches each
    assert seen[0][1] != seen[1][1]  # recomputed with the critic of the first epoch
    assert minibatches == [32] * 8 and trainer.optim_count == 8


def test_off_policy_step_fills_the_buffer_before_hooks_and_updates_targets_before_post_optim():
    trainer = build_parts(compose_run_config(DQN)).trainer
    target = trainer.loss_module.target_value_network_params
    before = target.clone()
    lengths, target_moved = [], []
    trainer.register_op("batch_process", lambda b: lengths.append(len(trainer.replay_buffer)))
    trainer.register_op("post_optim", lambda: target_moved.append(bool((target != before).any())))
    trainer.train()
    assert lengths == [32, 64, 96]  # the warm-up batch is stored too
    assert trainer.optim_count == 9 and target_moved[0]  # 3 steps per batch, from the first (32 >= 32) on


def test_register_op_accepts_enum_and_strings_and_names_the_choices():
    trainer = build_parts(compose_run_config(PPO)).trainer
    trainer.register_op(HookPoint.POST_STEPS, lambda: None)
    trainer.register_op("post_steps", lambda: None)
    assert len(trainer._ops["post_steps"]) == 2
    with pytest.raises(RuntimeError, match="not recognised. Choose from"):
        trainer.register_op("post_batch", lambda: None)


def test_no_hook_reads_trainer_privates():
    hooks = Path(__file__).parents[2] / "src" / "tdrl" / "trainers" / "hooks"
    offenders = [f"{path.name}: {m.group(0)}" for path in hooks.glob("*.py")
                 for m in re.finditer(r"trainer\._[a-z]\w*", path.read_text())]
    assert offenders == []
