"""Configs for replay buffers (group ``replay_buffer``), ``storage``, ``sampler`` and ``writer``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omegaconf import MISSING

from tdrl.trainers.algorithms.configs.common import ConfigBase

__all__ = [
    "LazyMemmapStorageConfig", "LazyStackStorageConfig", "LazyTensorStorageConfig", "ListStorageConfig",
    "PrioritizedSamplerConfig", "TensorStorageConfig",
    "RandomSamplerConfig", "ReplayBufferBaseConfig", "ReplayBufferConfig", "RoundRobinWriterConfig",
    "SamplerConfig", "SamplerWithoutReplacementConfig", "SliceSamplerConfig",
    "SliceSamplerWithoutReplacementConfig", "StorageConfig", "TensorDictReplayBufferConfig", "WriterConfig",
]

_RB = "tdrl.data."


@dataclass
class WriterConfig(ConfigBase):
    """Parent of writer configs.

    Examples:
        >>> from hydra.utils import instantiate
        >>> writer = instantiate(RoundRobinWriterConfig())
        >>> isinstance(RoundRobinWriterConfig(), WriterConfig), type(writer).__name__
        (True, 'RoundRobinWriter')
    """


@dataclass
class RoundRobinWriterConfig(WriterConfig):
    """:class:`~tdrl.data.RoundRobinWriter`: overwrite the oldest entries first.

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(RoundRobinWriterConfig())).__name__
        'RoundRobinWriter'
    """

    compilable: bool = False
    track_generations: bool = False
    _target_: str = _RB + "RoundRobinWriter"


@dataclass
class SamplerConfig(ConfigBase):
    """Parent of sampler configs.

    Examples:
        >>> from hydra.utils import instantiate
        >>> sampler = instantiate(RandomSamplerConfig())
        >>> isinstance(RandomSamplerConfig(), SamplerConfig), type(sampler).__name__
        (True, 'RandomSampler')
    """


@dataclass
class RandomSamplerConfig(SamplerConfig):
    """:class:`~tdrl.data.RandomSampler`: uniform with replacement.

    Examples:
        >>> from hydra.utils import instantiate
        >>> type(instantiate(RandomSamplerConfig())).__name__
        'RandomSampler'
    """

    _target_: str = _RB + "RandomSampler"


@dataclass
class SamplerWithoutReplacementConfig(SamplerConfig):
    """:class:`~tdrl.data.SamplerWithoutReplacement`: epochs over the storage (minibatches for PPO).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(SamplerWithoutReplacementConfig(drop_last=True)).drop_last
        True
    """

    drop_last: bool = False
    shuffle: bool = True
    _target_: str = _RB + "SamplerWithoutReplacement"


@dataclass
class PrioritizedSamplerConfig(SamplerConfig):
    """:class:`~tdrl.data.PrioritizedSampler` (``max_capacity``, ``alpha`` and ``beta`` are required).

    Examples:
        >>> from hydra.utils import instantiate
        >>> sampler = instantiate(PrioritizedSamplerConfig(max_capacity=16, alpha=0.6, beta=0.4))
        >>> type(sampler).__name__
        'PrioritizedSampler'
    """

    max_capacity: int = MISSING
    alpha: float = MISSING
    beta: float = MISSING
    eps: float = 1e-8
    reduction: str = "max"
    max_priority_within_buffer: bool = False
    _target_: str = _RB + "PrioritizedSampler"


@dataclass
class _SliceFields(SamplerConfig):
    num_slices: int | None = None
    slice_len: int | None = None
    end_key: Any = None
    end_keys: Any = None
    traj_key: Any = None
    ends: Any = None
    trajectories: Any = None
    truncated_key: Any = ("next", "truncated")
    init_key: Any = "is_init"
    strict_length: bool = True
    compile: Any = False
    use_gpu: Any = False
    _convert_: str = "all"


@dataclass
class SliceSamplerConfig(_SliceFields):
    """:class:`~tdrl.data.SliceSampler`: contiguous sub-trajectories.

    Examples:
        >>> from hydra.utils import instantiate
        >>> sampler = instantiate(SliceSamplerConfig(slice_len=4, traj_key="episode"))
        >>> type(sampler).__name__, sampler.slice_len
        ('SliceSampler', 4)
    """

    step_key: Any = "step_count"
    fragmented: bool = False
    cache_values: bool = False
    pad_output: bool = False
    span: Any = False
    _target_: str = _RB + "SliceSampler"


@dataclass
class SliceSamplerWithoutReplacementConfig(_SliceFields):
    """:class:`~tdrl.data.SliceSamplerWithoutReplacement`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> sampler = instantiate(SliceSamplerWithoutReplacementConfig(num_slices=2, traj_key="episode"))
        >>> type(sampler).__name__, sampler.num_slices
        ('SliceSamplerWithoutReplacement', 2)
    """

    drop_last: bool = False
    shuffle: bool = True
    _target_: str = _RB + "SliceSamplerWithoutReplacement"


@dataclass
class StorageConfig(ConfigBase):
    """Parent of storage configs.

    Examples:
        >>> from hydra.utils import instantiate
        >>> storage = instantiate(ListStorageConfig(max_size=5))
        >>> isinstance(ListStorageConfig(), StorageConfig), type(storage).__name__, storage.max_size
        (True, 'ListStorage', 5)
    """

    _partial_: bool = False


@dataclass
class ListStorageConfig(StorageConfig):
    """:class:`~tdrl.data.ListStorage`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> storage = instantiate(ListStorageConfig(max_size=3))
        >>> type(storage).__name__, storage.max_size
        ('ListStorage', 3)
    """

    max_size: int | None = None
    compilable: bool = False
    device: Any = None
    _target_: str = _RB + "ListStorage"


@dataclass
class LazyTensorStorageConfig(StorageConfig):
    """:class:`~tdrl.data.LazyTensorStorage`: preallocated on the first write.

    Examples:
        >>> from hydra.utils import instantiate
        >>> len(instantiate(LazyTensorStorageConfig(max_size=10)))
        0
    """

    max_size: int = MISSING
    device: Any = "cpu"
    ndim: int = 1
    compilable: bool = False
    consolidated: bool = False
    shared_init: bool = False
    cleanup_memmap: bool = True
    _target_: str = _RB + "LazyTensorStorage"


@dataclass
class TensorStorageConfig(StorageConfig):
    """:class:`~tdrl.data.TensorStorage` over a given tensor or tensordict (``storage``).

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> storage = instantiate(TensorStorageConfig(storage=torch.zeros(4, 2)))
        >>> type(storage).__name__, storage.max_size
        ('TensorStorage', 4)
    """

    storage: Any = MISSING
    max_size: int | None = None
    device: Any = "cpu"
    ndim: int = 1
    compilable: bool = False
    _target_: str = _RB + "TensorStorage"


@dataclass
class LazyStackStorageConfig(StorageConfig):
    """:class:`~tdrl.data.LazyStackStorage`: a list of tensordicts, stacked lazily when sampled.

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> from tensordict import TensorDict
        >>> storage = instantiate(LazyStackStorageConfig(max_size=4))
        >>> storage.set(0, TensorDict(obs=torch.zeros(2)))
        >>> storage.set(1, TensorDict(obs=torch.ones(3)))
        >>> type(storage).__name__, len(storage)
        ('LazyStackStorage', 2)
    """

    max_size: int | None = None
    compilable: bool = False
    stack_dim: int = 0
    device: Any = None
    _target_: str = _RB + "LazyStackStorage"


@dataclass
class LazyMemmapStorageConfig(StorageConfig):
    """:class:`~tdrl.data.LazyMemmapStorage`: memory-mapped files, created on the first write.

    Examples:
        >>> import tempfile
        >>> from hydra.utils import instantiate
        >>> storage = instantiate(LazyMemmapStorageConfig(max_size=5, scratch_dir=tempfile.mkdtemp()))
        >>> type(storage).__name__, storage.max_size
        ('LazyMemmapStorage', 5)
    """

    max_size: int = MISSING
    scratch_dir: Any = None
    device: Any = "cpu"
    ndim: int = 1
    existsok: bool = False
    compilable: bool = False
    shared_init: bool = False
    auto_cleanup: bool | None = None
    _target_: str = _RB + "LazyMemmapStorage"


@dataclass
class ReplayBufferBaseConfig(ConfigBase):
    """Fields shared by the replay buffers (storage, sampler and writer are configs or instances).

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> cfg = ReplayBufferConfig(storage=ListStorageConfig(max_size=4), batch_size=2)
        >>> isinstance(cfg, ReplayBufferBaseConfig)
        True
        >>> rb = instantiate(cfg)
        >>> _ = rb.extend(torch.arange(4))
        >>> rb.sample().shape
        torch.Size([2])
    """

    _partial_: bool = False
    storage: Any = None
    sampler: Any = None
    writer: Any = None
    collate_fn: Any = None
    pin_memory: bool = False
    prefetch: int | None = None
    transform: Any = None
    transform_factory: Any = None
    batch_size: int | None = None
    dim_extend: int | None = None
    checkpointer: Any = None
    generator: Any = None
    shared: bool = False
    compilable: bool | None = None


@dataclass
class ReplayBufferConfig(ReplayBufferBaseConfig):
    """:class:`~tdrl.data.ReplayBuffer`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> rb = instantiate(ReplayBufferConfig(storage=LazyTensorStorageConfig(max_size=8), batch_size=4))
        >>> type(rb.sampler).__name__
        'RandomSampler'
    """

    _target_: str = _RB + "ReplayBuffer"


@dataclass
class TensorDictReplayBufferConfig(ReplayBufferBaseConfig):
    """:class:`~tdrl.data.TensorDictReplayBuffer` (writes priorities back from ``priority_key``).

    Examples:
        >>> import torch
        >>> from hydra.utils import instantiate
        >>> from tensordict import TensorDict
        >>> rb = instantiate(TensorDictReplayBufferConfig(storage=LazyTensorStorageConfig(max_size=8), batch_size=2))
        >>> _ = rb.extend(TensorDict({"obs": torch.zeros(4, 3)}, [4]))
        >>> rb.sample()["obs"].shape
        torch.Size([2, 3])
    """

    priority_key: Any = "td_error"
    _target_: str = _RB + "TensorDictReplayBuffer"
