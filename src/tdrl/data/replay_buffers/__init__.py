"""Replay buffers: buffers, storages, samplers, writers and checkpointing."""

from tdrl.data.replay_buffers.ensemble import ReplayBufferEnsemble, StorageEnsemble
from tdrl.data.replay_buffers.ray import RayReplayBuffer
from tdrl.data.replay_buffers.remote import RemoteTensorDictReplayBuffer
from tdrl.data.replay_buffers.replay_buffers import ReplayBuffer
from tdrl.data.replay_buffers.samplers import (
    MinSegmentTreeFp32,
    MinSegmentTreeFp64,
    PrioritizedSampler,
    PrioritizedSliceSampler,
    RandomSampler,
    Sampler,
    SamplerWithoutReplacement,
    SliceSampler,
    SliceSamplerWithoutReplacement,
    SumSegmentTreeFp32,
    SumSegmentTreeFp64,
)
from tdrl.data.replay_buffers.storages import (
    CompressedListStorage,
    LazyMemmapStorage,
    LazyStackStorage,
    LazyTensorStorage,
    ListStorage,
    Storage,
    TensorStorage,
)
from tdrl.data.replay_buffers.tensordict_buffers import (
    PrioritizedReplayBuffer,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
)
from tdrl.data.replay_buffers.writers import (
    RoundRobinWriter,
    TensorDictMaxValueWriter,
    TensorDictRoundRobinWriter,
    Writer,
)

__all__ = [
    "CompressedListStorage",
    "LazyMemmapStorage",
    "LazyStackStorage",
    "LazyTensorStorage",
    "ListStorage",
    "PrioritizedReplayBuffer",
    "PrioritizedSampler",
    "MinSegmentTreeFp32",
    "MinSegmentTreeFp64",
    "SumSegmentTreeFp32",
    "SumSegmentTreeFp64",
    "PrioritizedSliceSampler",
    "RandomSampler",
    "SamplerWithoutReplacement",
    "SliceSampler",
    "SliceSamplerWithoutReplacement",
    "RayReplayBuffer",
    "RemoteTensorDictReplayBuffer",
    "ReplayBuffer",
    "ReplayBufferEnsemble",
    "RoundRobinWriter",
    "Sampler",
    "Storage",
    "StorageEnsemble",
    "TensorDictMaxValueWriter",
    "TensorDictPrioritizedReplayBuffer",
    "TensorDictReplayBuffer",
    "TensorDictRoundRobinWriter",
    "TensorStorage",
    "Writer",
]
