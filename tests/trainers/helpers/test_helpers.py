"""tdrl.trainers.helpers: TorchRL's flat-config builders (its sota scripts import them at top level)."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf
from tensordict import TensorDict

from tdrl.collectors import MultiSyncCollector
from tdrl.envs import ParallelEnv, PendulumEnv
from tdrl.modules import QValueActor
from tdrl.objectives import DQNLoss, HardUpdate, SoftUpdate
from tdrl.trainers.helpers import (
    ACTIVATIONS,
    LoggerConfig,
    correct_for_frame_skip,
    make_dqn_loss,
    make_replay_buffer,
    make_target_updater,
    sync_sync_collector,
)
from tdrl.trainers.helpers.collectors import _split
from tdrl.trainers.helpers.models import ACTIVATIONS as MODELS_ACTIVATIONS


def _dqn_cfg(**overrides: object):
    base = {"loss": "double", "hard_update": False, "value_network_update_interval": 4, "distributional": False,
            "loss_function": "l2", "gamma": 0.9}
    return OmegaConf.create({**base, **overrides})


def _actor() -> QValueActor:
    return QValueActor(torch.nn.Linear(3, 2), in_keys=["observation"], action_space="one_hot")


def test_activations_are_torchrl_table() -> None:
    assert MODELS_ACTIVATIONS is ACTIVATIONS
    assert dict(ACTIVATIONS) == {"elu": torch.nn.ELU, "tanh": torch.nn.Tanh,
                                                       "relu": torch.nn.ReLU}


def test_correct_for_frame_skip_divides_frame_counts_only() -> None:
    cfg = OmegaConf.create({"frame_skip": 4, "total_frames": 1001, "frames_per_batch": 64, "init_random_frames": None,
                            "lr": 3e-4, "batch_size": 256})
    assert correct_for_frame_skip(cfg) is cfg
    assert (cfg.total_frames, cfg.frames_per_batch, cfg.init_random_frames) == (250, 16, None)
    assert (cfg.lr, cfg.batch_size) == (3e-4, 256)


@pytest.mark.parametrize("frame_skip", [0, None, 2.0])
def test_correct_for_frame_skip_rejects_bad_frame_skip(frame_skip: object) -> None:
    with pytest.raises(ValueError, match="frame_skip"):
        correct_for_frame_skip(OmegaConf.create({"frame_skip": frame_skip, "total_frames": 10}))


def test_logger_config_defaults() -> None:
    cfg = OmegaConf.structured(LoggerConfig)
    assert (cfg.logger, cfg.record_video, cfg.offline_logging, cfg.recorder_log_keys) == ("csv", False, True, None)


def test_target_updater_follows_loss_and_hard_update() -> None:
    loss, soft = make_dqn_loss(_actor(), _dqn_cfg())
    assert isinstance(loss, DQNLoss) and isinstance(soft, SoftUpdate)
    assert isinstance(make_target_updater(_dqn_cfg(hard_update=True), loss), HardUpdate)
    single, none = make_dqn_loss(_actor(), _dqn_cfg(loss="single"))
    assert none is None and not single.delay_value
    with pytest.raises(ValueError, match="hard_update=True needs loss='double'"):
        make_target_updater(_dqn_cfg(loss="single", hard_update=True), single)
    with pytest.raises(ValueError, match="'single' or 'double'"):
        make_dqn_loss(_actor(), _dqn_cfg(loss="triple"))


def test_dqn_loss_gamma_and_loss_function() -> None:
    loss, _ = make_dqn_loss(_actor(), _dqn_cfg(gamma=0.5, loss_function="smooth_l1"))
    assert loss.loss_function == "smooth_l1"
    assert float(loss.value_estimator.gamma) == pytest.approx(0.5)


def test_replay_buffer_from_flat_config(tmp_path) -> None:
    cfg = OmegaConf.create({"buffer_size": 10, "buffer_scratch_dir": str(tmp_path), "buffer_prefetch": 0,
                            "batch_size": 4, "prb": False})
    rb = make_replay_buffer("cpu", cfg)
    rb.extend(TensorDict({"x": torch.arange(6.0)}, [6]))
    assert len(rb) == 6 and rb.sample().shape == torch.Size([4])
    assert type(rb.sampler).__name__ == "RandomSampler"


def test_split_groups_env_constructors() -> None:
    fns, kwargs = _split(PendulumEnv, {"seed": 1}, num_env_per_collector=2, num_collectors=2)
    assert len(fns) == 2 and kwargs == [None, None]
    env = fns[0]()
    assert isinstance(env, ParallelEnv) and env.batch_size == torch.Size([2])
    env.close()
    assert _split([PendulumEnv] * 3, None, None, 2)[0] != []
    with pytest.raises(ValueError, match="less than"):
        _split([PendulumEnv] * 5, None, 2, 2)
    with pytest.raises(ValueError, match="needs both"):
        _split(PendulumEnv, None, 2, None)


def test_sync_sync_collector_two_workers() -> None:
    collector = sync_sync_collector(PendulumEnv, None, num_env_per_collector=1, num_collectors=2,
                                    frames_per_batch=8, total_frames=8)
    try:
        assert isinstance(collector, MultiSyncCollector)
        assert next(iter(collector)).numel() == 8
    finally:
        collector.shutdown()
