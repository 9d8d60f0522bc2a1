"""Replay buffers: buffers, storages, samplers, writers and checkpointing."""

from tdrl.data.replay_buffers.samplers import RandomSampler, Sampler

__all__ = [
    "RandomSampler",
    "Sampler",
]
