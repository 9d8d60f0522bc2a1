"""TorchRL's ``trainers.helpers.replay_buffer``: a replay buffer from a flat config."""

from __future__ import annotations

from typing import Any

import torch

from tdrl.data import LazyMemmapStorage, PrioritizedSampler, RandomSampler, TensorDictReplayBuffer

__all__ = ["make_replay_buffer"]


def make_replay_buffer(device: Any, cfg: Any) -> TensorDictReplayBuffer:
    """A memory-mapped :class:`~tdrl.data.TensorDictReplayBuffer` of ``cfg.buffer_size`` items.

    Reads ``buffer_size``, ``buffer_scratch_dir``, ``buffer_prefetch``, ``batch_size`` and ``prb`` (prioritized
    sampling with ``alpha=0.7``, ``beta=0.5``, as TorchRL's helper). Memory is pinned when ``device`` is not the CPU.

    Examples:
        >>> import tempfile
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.create({"buffer_size": 100, "buffer_scratch_dir": tempfile.mkdtemp(),
        ...                         "buffer_prefetch": 0, "batch_size": 8, "prb": True})
        >>> type(make_replay_buffer("cpu", cfg).sampler).__name__
        'PrioritizedSampler'
    """
    device = torch.device(device)
    sampler = PrioritizedSampler(max_capacity=cfg.buffer_size, alpha=0.7, beta=0.5) if cfg.prb else RandomSampler()
    return TensorDictReplayBuffer(
        storage=LazyMemmapStorage(cfg.buffer_size, scratch_dir=cfg.buffer_scratch_dir),
        sampler=sampler,
        pin_memory=device.type != "cpu",
        prefetch=cfg.buffer_prefetch or None,
        batch_size=cfg.batch_size,
    )
