"""Replay-buffer samplers."""

from tdrl.data.replay_buffers.samplers.base import Sampler, register_without_replacement
from tdrl.data.replay_buffers.samplers.consuming import ConsumingSampler
from tdrl.data.replay_buffers.samplers.ensemble import SamplerEnsemble
from tdrl.data.replay_buffers.samplers.prioritized import PrioritizedSampler
from tdrl.data.replay_buffers.samplers.prioritized_slice import PrioritizedSliceSampler
from tdrl.data.replay_buffers.samplers.random import RandomSampler
from tdrl.data.replay_buffers.samplers.segment_tree import (
    MinSegmentTree,
    MinSegmentTreeFp32,
    MinSegmentTreeFp64,
    SumSegmentTree,
    SumSegmentTreeFp32,
    SumSegmentTreeFp64,
)
from tdrl.data.replay_buffers.samplers.slice import SliceSampler
from tdrl.data.replay_buffers.samplers.slice_without_replacement import SliceSamplerWithoutReplacement
from tdrl.data.replay_buffers.samplers.staleness import StalenessAwareSampler
from tdrl.data.replay_buffers.samplers.without_replacement import SamplerWithoutReplacement

__all__ = [
    "MinSegmentTree",
    "MinSegmentTreeFp32",
    "MinSegmentTreeFp64",
    "ConsumingSampler",
    "PrioritizedSampler",
    "PrioritizedSliceSampler",
    "RandomSampler",
    "Sampler",
    "SamplerEnsemble",
    "SamplerWithoutReplacement",
    "SliceSampler",
    "SliceSamplerWithoutReplacement",
    "StalenessAwareSampler",
    "SumSegmentTree",
    "SumSegmentTreeFp32",
    "SumSegmentTreeFp64",
    "register_without_replacement",
]
