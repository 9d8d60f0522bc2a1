"""TorchRL's ``trainers.helpers``: builders for its older flat-config (non-Hydra-structured) example scripts."""

from __future__ import annotations

from tdrl.trainers.helpers.collectors import sync_async_collector, sync_sync_collector
from tdrl.trainers.helpers.envs import correct_for_frame_skip
from tdrl.trainers.helpers.logger import LoggerConfig
from tdrl.trainers.helpers.losses import make_dqn_loss, make_target_updater
from tdrl.trainers.helpers.models import ACTIVATIONS
from tdrl.trainers.helpers.replay_buffer import make_replay_buffer

__all__ = [
    "ACTIVATIONS", "LoggerConfig", "correct_for_frame_skip", "make_dqn_loss", "make_replay_buffer",
    "make_target_updater", "sync_async_collector", "sync_sync_collector",
]
