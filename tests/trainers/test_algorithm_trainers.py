"""Algorithm trainers wire their hooks and run a few batches (tiny budgets)."""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import TensorDictSequential

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.envs import GymEnv
from tdrl.modules import MLP, EGreedyModule, QValueActor
from tdrl.objectives import DQNLoss, SoftUpdate
from tdrl.trainers.algorithms import DQNTrainer, SACTrainer
from tdrl.trainers.checkpoint import load_checkpoint


def _dqn(tmp_path):
    torch.manual_seed(0)
    env = GymEnv("CartPole-v1")
    qnet = QValueActor(MLP(in_features=4, out_features=2, num_cells=[16]), in_keys=["observation"], spec=env.action_spec)
    greedy = EGreedyModule(env.action_spec, eps_init=1.0, eps_end=0.1, annealing_num_steps=256)
    loss = DQNLoss(qnet, action_space=env.action_spec, delay_value=True)
    collector = Collector(env, TensorDictSequential(qnet, greedy), frames_per_batch=64, total_frames=256)
    trainer = DQNTrainer(
        collector=collector, total_frames=256, frame_skip=1, optim_steps_per_batch=4, loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters(), lr=1e-3),
        replay_buffer=TensorDictReplayBuffer(storage=LazyTensorStorage(1000), batch_size=32),
        target_net_updater=SoftUpdate(loss, eps=0.9), greedy_module=greedy, progress_bar=False,
        save_trainer_file=tmp_path / "c.pt", save_trainer_interval=128,
    )
    return trainer, loss, greedy


def test_dqn_trainer_fills_buffer_anneals_epsilon_updates_targets(tmp_path):
    trainer, loss, greedy = _dqn(tmp_path)
    target_before = loss.target_value_network_params.clone()
    trainer.train()
    assert trainer._optim_count == 16 and len(trainer.replay_buffer) == 256
    assert float(greedy.eps) < 1.0
    assert (target_before != loss.target_value_network_params).any()
    state = load_checkpoint(tmp_path / "c.pt")
    assert state["state"]["collected_frames"] == 256
    assert len(state["modules"]["replay_buffer"]["replay_buffer"]["_storage"]) > 0


def test_dqn_checkpoint_restores_replay_buffer_and_exploration(tmp_path):
    trainer, _, greedy = _dqn(tmp_path)
    trainer.train()
    other, _, greedy2 = _dqn(tmp_path)
    other.load_from_file(tmp_path / "c.pt")
    assert len(other.replay_buffer) == 256
    assert float(greedy2.eps) == pytest.approx(float(greedy.eps))


def test_sac_requires_target_updater():
    with pytest.raises(ValueError, match="target_net_updater"):
        SACTrainer(collector=None, total_frames=10, frame_skip=1, optim_steps_per_batch=1, loss_module=None,
                   replay_buffer=TensorDictReplayBuffer(storage=LazyTensorStorage(10)))
