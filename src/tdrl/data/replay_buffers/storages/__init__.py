"""Replay-buffer storages."""

from tdrl.data.replay_buffers.storages.base import Storage
from tdrl.data.replay_buffers.storages.compressed import CompressedListStorage
from tdrl.data.replay_buffers.storages.ensemble import StorageEnsemble
from tdrl.data.replay_buffers.storages.list import LazyStackStorage, ListStorage
from tdrl.data.replay_buffers.storages.memmap import LazyMemmapStorage
from tdrl.data.replay_buffers.storages.tensor import LazyTensorStorage, TensorStorage

__all__ = [
    "CompressedListStorage",
    "LazyMemmapStorage",
    "LazyStackStorage",
    "LazyTensorStorage",
    "ListStorage",
    "Storage",
    "StorageEnsemble",
    "TensorStorage",
]
