"""Offline-to-online training data: ``OfflineToOnlineReplayBuffer`` and ``prefill_replay_buffer``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl.data.replay_buffers.replay_buffers import ReplayBuffer
from tdrl.data.replay_buffers.storages import LazyTensorStorage, Storage

__all__ = ["OfflineToOnlineReplayBuffer", "prefill_replay_buffer"]


def _load_dataset(dataset_id: str, **kwargs: Any) -> Any:
    # tdrl.data.datasets is built on this package, so its loader is looked up by name when a string is given
    # (as load_dataset's own registry resolves "module:attribute" strings).
    return importlib.import_module("tdrl.data.datasets").load_dataset(dataset_id, **kwargs)


def _drop_index(batch: Any) -> Any:
    return batch.exclude("index") if isinstance(batch, TensorDictBase) else batch


class OfflineToOnlineReplayBuffer:
    """An offline dataset and a growing online buffer, sampled in a fixed proportion.

    :meth:`extend` writes to the online buffer only. :meth:`sample` draws exactly
    ``round(offline_fraction * batch_size)`` rows from the offline dataset and the rest from the online buffer
    and concatenates them (offline rows first, without ``"index"``) into one ``[batch_size]`` batch; while the online buffer is
    empty, or when the offline share rounds to the whole batch, it samples the offline dataset alone, and when
    the share rounds to zero the online buffer alone. :meth:`anneal` lowers the fraction linearly to 0.

    Args:
        offline_dataset: a dataset or replay buffer, or a ``"<source>:<id>"`` string for
            :func:`~tdrl.data.datasets.load_dataset`.
        online_storage: the online buffer's storage (exclusive with ``online_capacity``).
        online_capacity: the size of a :class:`~tdrl.data.LazyTensorStorage` for the online buffer.
        offline_fraction: the offline share of each batch, in ``(0, 1)``.
        batch_size: the default sample size (also passed to the dataset built from a string).
        transform: applied to each concatenated batch.
        **dataset_kwargs: passed to the dataset built from a string.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> offline = ReplayBuffer(storage=LazyTensorStorage(100))
        >>> _ = offline.extend(TensorDict({"obs": torch.zeros(100, 2)}, [100]))
        >>> rb = OfflineToOnlineReplayBuffer(offline, online_capacity=50, offline_fraction=0.75, batch_size=8)
        >>> _ = rb.extend(TensorDict({"obs": torch.ones(10, 2)}, [10]))
        >>> rb.sample()["obs"][:, 0].tolist()
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
        >>> rb.anneal(step=5, total_steps=10); rb.offline_fraction
        0.375
    """

    def __init__(
        self,
        offline_dataset: Any,
        *,
        online_storage: Storage | None = None,
        online_capacity: int | None = None,
        offline_fraction: float = 0.5,
        batch_size: int | None = None,
        transform: Callable | None = None,
        **dataset_kwargs: Any,
    ) -> None:
        if (online_storage is None) == (online_capacity is None):
            raise ValueError("pass exactly one of online_storage and online_capacity.")
        if not 0.0 < float(offline_fraction) < 1.0:
            raise ValueError(f"offline_fraction must be in (0, 1), got {offline_fraction}.")
        if isinstance(offline_dataset, str):
            if "batch_size" not in dataset_kwargs:
                if batch_size is None:
                    raise ValueError(f"batch_size is needed to build the dataset {offline_dataset!r}.")
                dataset_kwargs["batch_size"] = batch_size
            offline_dataset = _load_dataset(offline_dataset, **dataset_kwargs)
        elif dataset_kwargs:
            raise ValueError(
                f"dataset kwargs {sorted(dataset_kwargs)} are only used to build a dataset named by a string."
            )
        storage = online_storage if online_storage is not None else LazyTensorStorage(int(online_capacity or 0))
        self._offline_buffer = offline_dataset
        self._online_buffer = ReplayBuffer(storage=storage)
        self._offline_fraction = self._base_offline_fraction = float(offline_fraction)
        self._batch_size = batch_size
        self._transform = transform

    def extend(self, data: Any) -> torch.Tensor:
        """Writes ``data`` to the online buffer; returns its indices there."""
        return self._online_buffer.extend(data)

    def sample(self, batch_size: int | None = None) -> TensorDictBase:
        """A ``[batch_size]`` batch: the offline share first, then the online rows."""
        batch_size = self._batch_size if batch_size is None else batch_size
        if batch_size is None:
            raise ValueError("batch_size must be given here or to the constructor.")
        n_offline = round(self._offline_fraction * batch_size)
        if len(self._online_buffer) == 0 or n_offline >= batch_size:
            out = self._offline_buffer.sample(batch_size)
        elif n_offline == 0:
            out = self._online_buffer.sample(batch_size)
        else:
            offline = self._offline_buffer.sample(n_offline)
            online = self._online_buffer.sample(batch_size - n_offline)
            # An "index" points into one of two storages (and only a TensorDict buffer writes it): dropped.
            out = torch.cat([_drop_index(offline), _drop_index(online)], 0)
        return self._transform(out) if self._transform is not None else out

    def anneal(self, step: int, total_steps: int) -> None:
        """Sets ``offline_fraction`` to ``base * max(0, 1 - step / total_steps)``."""
        if total_steps <= 0:
            raise ValueError(f"total_steps must be positive, got {total_steps}.")
        self._offline_fraction = self._base_offline_fraction * max(0.0, 1.0 - step / total_steps)

    @property
    def offline_fraction(self) -> float:
        """The current offline share (after :meth:`anneal`)."""
        return self._offline_fraction

    @property
    def offline_buffer(self) -> Any:
        """The offline dataset."""
        return self._offline_buffer

    @property
    def online_buffer(self) -> ReplayBuffer:
        """The online replay buffer."""
        return self._online_buffer

    def __len__(self) -> int:
        return len(self._offline_buffer) + len(self._online_buffer)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(offline={type(self._offline_buffer).__name__}, "
            f"offline_fraction={self._offline_fraction:.3f}, online_size={len(self._online_buffer)}, "
            f"batch_size={self._batch_size})"
        )


def prefill_replay_buffer(
    rb: ReplayBuffer, dataset: Any, n_samples: int | None = None, chunk_size: int = 1000
) -> ReplayBuffer:
    """Seeds ``rb`` with ``n_samples`` rows sampled from an offline dataset, ``chunk_size`` at a time.

    The rows are drawn with the dataset's sampler (as TorchRL), so a random sampler may repeat rows; give the
    dataset a :class:`~tdrl.data.SamplerWithoutReplacement` for distinct rows.

    Args:
        rb: the buffer to fill.
        dataset: a dataset or replay buffer, or a ``"<source>:<id>"`` string (built with
            ``batch_size=chunk_size``).
        n_samples: how many rows (default: the dataset's length).
        chunk_size: rows per sample call.

    Returns:
        ``rb``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> dataset = ReplayBuffer(storage=LazyTensorStorage(50))
        >>> _ = dataset.extend(TensorDict({"obs": torch.randn(50, 3)}, [50]))
        >>> len(prefill_replay_buffer(ReplayBuffer(storage=LazyTensorStorage(100)), dataset, n_samples=30, chunk_size=8))
        30
    """
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}.")
    if isinstance(dataset, str):
        dataset = _load_dataset(dataset, batch_size=chunk_size)
    total = len(dataset) if n_samples is None else min(int(n_samples), len(dataset))
    copied = 0
    while copied < total:
        chunk = min(chunk_size, total - copied)
        rb.extend(dataset.sample(chunk))
        copied += chunk
    return rb
