"""Replay-buffer samplers."""

from tdrl.data.replay_buffers.samplers.base import Sampler, register_without_replacement
from tdrl.data.replay_buffers.samplers.random import RandomSampler

__all__ = [
    "RandomSampler",
    "Sampler",
    "register_without_replacement",
]
