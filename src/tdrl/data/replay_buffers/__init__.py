"""Replay buffers: buffers, storages, samplers, writers and checkpointing."""

from tdrl.data.replay_buffers.her import HERReplayBuffer, HindsightStrategy
from tdrl.data.replay_buffers.ensemble import ReplayBufferEnsemble, StorageEnsemble
from tdrl.data.replay_buffers.ray import RayReplayBuffer
from tdrl.data.replay_buffers.remote import RemoteTensorDictReplayBuffer
from tdrl.data.replay_buffers.replay_buffers import ReplayBuffer
from tdrl.data.replay_buffers.sample_units import SampleUnit, Sequence, Transition
from tdrl.data.replay_buffers.samplers import (
    ConsumingSampler,
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
from tdrl.data.replay_buffers.storage_checkpointers import (
    CompressedListStorageCheckpointer,
    FlatStorageCheckpointer,
    H5StorageCheckpointer,
    ListStorageCheckpointer,
    NestedStorageCheckpointer,
    StorageCheckpointerBase,
    StorageEnsembleCheckpointer,
    TensorStorageCheckpointer,
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
from tdrl.data.replay_buffers.ted import (
    DEFAULT_DONE_KEYS,
    Flat2TED,
    H5Combine,
    H5Split,
    Nested2TED,
    TED2Flat,
    TED2Nested,
)
from tdrl.data.replay_buffers.tensordict_buffers import (
    PrioritizedReplayBuffer,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
)
from tdrl.data.replay_buffers.writers import (
    ImmutableDatasetWriter,
    RoundRobinWriter,
    TensorDictMaxValueWriter,
    TensorDictRoundRobinWriter,
    Writer,
)

__all__ = [
    "HERReplayBuffer",
    "HindsightStrategy",
    "ImmutableDatasetWriter",
    "DEFAULT_DONE_KEYS",
    "CompressedListStorageCheckpointer",
    "Flat2TED",
    "FlatStorageCheckpointer",
    "H5Combine",
    "H5Split",
    "H5StorageCheckpointer",
    "ListStorageCheckpointer",
    "Nested2TED",
    "NestedStorageCheckpointer",
    "StorageCheckpointerBase",
    "StorageEnsembleCheckpointer",
    "TED2Flat",
    "TED2Nested",
    "TensorStorageCheckpointer",
    "CompressedListStorage",
    "LazyMemmapStorage",
    "LazyStackStorage",
    "LazyTensorStorage",
    "ListStorage",
    "PrioritizedReplayBuffer",
    "ConsumingSampler",
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
    "SampleUnit",
    "Sampler",
    "Sequence",
    "Storage",
    "StorageEnsemble",
    "TensorDictMaxValueWriter",
    "TensorDictPrioritizedReplayBuffer",
    "TensorDictReplayBuffer",
    "TensorDictRoundRobinWriter",
    "TensorStorage",
    "Transition",
    "Writer",
]
