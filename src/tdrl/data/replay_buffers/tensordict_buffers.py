"""TensorDict and prioritized replay buffers."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import NestedKey, TensorDictBase

from tdrl.data.replay_buffers.replay_buffers import ReplayBuffer
from tdrl.data.replay_buffers.samplers.base import Sampler
from tdrl.data.replay_buffers.samplers.prioritized import PrioritizedSampler
from tdrl.data.replay_buffers.storages.base import Storage
from tdrl.data.replay_buffers.storages.list import ListStorage
from tdrl.data.replay_buffers.writers import TensorDictRoundRobinWriter, Writer

__all__ = ["PrioritizedReplayBuffer", "TensorDictPrioritizedReplayBuffer", "TensorDictReplayBuffer"]

_REDUCE = {
    "max": lambda x, d: x.amax(d),
    "min": lambda x, d: x.amin(d),
    "mean": lambda x, d: x.mean(d),
    "median": lambda x, d: x.flatten(d[0]).median(-1).values,
}


def _drop_index(data: Any) -> Any:
    # "index" is the buffer's own output (the storage position); a batch sampled from a buffer and
    # written back must not store it as data. TorchRL's writer overwrites it likewise.
    if isinstance(data, TensorDictBase) and "index" in data.keys():
        return data.exclude("index")
    return data


def _is_prioritized(sampler: Sampler) -> bool:
    return type(sampler).update_priority is not Sampler.update_priority


class TensorDictReplayBuffer(ReplayBuffer):
    """A :class:`ReplayBuffer` of TensorDicts: sampled batches carry their storage ``"index"``.

    Sampler outputs (e.g. ``"priority_weight"``) are written into the batch too, and
    :meth:`update_tensordict_priority` reads ``priority_key`` and ``"index"`` from a batch.

    Keyword Args:
        priority_key: the key holding priorities (TD errors). Defaults to ``"td_error"``.
        **kwargs: the arguments of :class:`ReplayBuffer`.

    Examples:
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=3)
        >>> _ = rb.extend(TensorDict(obs=torch.arange(5), batch_size=[5]))
        >>> batch = rb.sample()
        >>> bool((batch["obs"] == batch["index"]).all())
        True
    """

    def __init__(self, *, priority_key: NestedKey = "td_error", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.priority_key = priority_key

    def _default_writer(self, compilable: bool) -> Writer:
        return TensorDictRoundRobinWriter(compilable=compilable)

    def _sample(self, batch_size: int) -> tuple[Any, dict]:
        data, info = super()._sample(batch_size)
        if isinstance(data, TensorDictBase):
            index = info["index"]
            if isinstance(index, tuple):
                index = torch.stack(index, -1)
            batch = data.batch_size
            data.set("index", index if len(batch) == 1 else index.reshape(*batch, *index.shape[1:]))
            for key, value in info.items():
                if key != "index" and isinstance(value, torch.Tensor):
                    data.set(key, _to_batch(value, batch))
        return data, info

    def extend(self, tensordicts: Any) -> torch.Tensor:
        data = self._prepare_batch(tensordicts)
        if data is None:  # held back by a write transform (e.g. MCAdvantage): nothing written
            return torch.zeros((0,), dtype=torch.long)
        data = _drop_index(data)
        index = self._extend(data)
        if (
            isinstance(data, TensorDictBase)
            and _is_prioritized(self._sampler)
            and data.get(self.priority_key, None) is not None
        ):
            self._update_from(data, index)
        return index

    def add(self, data: Any) -> int | torch.Tensor | None:
        data = _drop_index(data)
        index = super().add(data)
        if (
            index is not None
            and isinstance(data, TensorDictBase)
            and _is_prioritized(self._sampler)
            and data.get(self.priority_key, None) is not None
        ):
            self.update_priority(index, self._reduce(data.get(self.priority_key), 0))
        return index

    def _reduce(self, priority: torch.Tensor, lead: int) -> torch.Tensor:
        if priority.ndim > lead:
            reduction = getattr(self._sampler, "reduction", "max")
            priority = _REDUCE[reduction](priority, tuple(range(lead, priority.ndim)))
        return priority

    def _update_from(self, data: TensorDictBase, index: torch.Tensor) -> None:
        priority = data.get(self.priority_key).detach()
        lead = self._storage.ndim if self._storage.ndim > 1 else 1
        priority = self._reduce(priority, lead).reshape(-1)
        if isinstance(index, torch.Tensor) and index.ndim == 1:
            valid = index >= 0
            index, priority = index[valid], priority[valid]
        self.update_priority(index, priority)

    def update_tensordict_priority(self, data: TensorDictBase) -> None:
        """Sets the priorities of the items of ``data`` from ``data[priority_key]`` and ``data["index"]``.

        Args:
            data: a sampled batch (with ``"index"``) holding new priorities under ``priority_key``.
        """
        if not _is_prioritized(self._sampler):
            return
        index = data.get("index", None)
        if index is None:
            raise KeyError("update_tensordict_priority: the batch has no 'index' entry (was it sampled from this buffer?).")
        priority = data.get(self.priority_key, None)
        if priority is None:
            raise KeyError(f"update_tensordict_priority: the batch has no {self.priority_key!r} entry.")
        priority = self._reduce(priority.detach(), data.batch_dims).reshape(-1)
        if self._storage.ndim == 1:
            index = index.reshape(-1)
        else:
            index = index.reshape(-1, index.shape[-1])
        self.update_priority(index, priority)


def _require_sync(sync: bool) -> None:
    if not sync:
        raise ValueError("sync=False (priorities kept outside worker processes) is not supported by tdrl.")


def _prioritized_sampler(storage: Storage, alpha: float, beta: float, eps: float, dtype: torch.dtype, **kw: Any) -> PrioritizedSampler:
    return PrioritizedSampler(storage.max_size, alpha, beta, eps, dtype, **kw)


class PrioritizedReplayBuffer(ReplayBuffer):
    """A :class:`ReplayBuffer` with a :class:`PrioritizedSampler` (Schaul et al. 2015).

    Paper: https://arxiv.org/abs/1511.05952. ``sample(return_info=True)`` returns
    ``info["priority_weight"]``, the importance-sampling weights.

    Keyword Args:
        alpha: priority exponent.
        beta: importance-sampling exponent.
        eps: added to priorities. Defaults to ``1e-8``.
        dtype: precision of the priority trees. Defaults to ``torch.float``.
        storage: defaults to ``ListStorage(1000)``.
        sampler: a prioritized sampler to use instead of the built one.
        **kwargs: other :class:`ReplayBuffer` arguments.

    Examples:
        >>> from tdrl.data import LazyTensorStorage
        >>> rb = PrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(8), batch_size=4)
        >>> index = rb.extend(torch.arange(8.0))
        >>> rb.update_priority(index, torch.tensor([0.0, 0, 0, 0, 0, 0, 0, 5.0]))
        >>> data, info = rb.sample(return_info=True)
        >>> sorted(info)
        ['index', 'priority_weight']
    """

    def __init__(
        self,
        *,
        alpha: float,
        beta: float,
        eps: float = 1e-8,
        dtype: torch.dtype = torch.float,
        storage: Storage | None = None,
        sampler: Sampler | None = None,
        sampler_device: Any = None,
        sync: bool = True,
        **kwargs: Any,
    ) -> None:
        _require_sync(sync)
        storage = storage if storage is not None else ListStorage(1000)
        if sampler is None:
            sampler = _prioritized_sampler(storage, alpha, beta, eps, dtype, device=sampler_device)
        super().__init__(storage=storage, sampler=sampler, **kwargs)


class TensorDictPrioritizedReplayBuffer(TensorDictReplayBuffer):
    """A :class:`TensorDictReplayBuffer` with a :class:`PrioritizedSampler`.

    Sampled batches carry ``"index"`` and ``"priority_weight"``; data written with a
    ``priority_key`` entry get those priorities, others the sampler's default (max) priority.

    Keyword Args:
        alpha: priority exponent.
        beta: importance-sampling exponent.
        priority_key: defaults to ``"td_error"``.
        eps: added to priorities. Defaults to ``1e-8``.
        storage: defaults to ``ListStorage(1000)``.
        reduction: how per-step priorities of multi-step items are reduced. Defaults to ``"max"``.
        **kwargs: other :class:`ReplayBuffer` arguments.

    Examples:
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> rb = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(8), batch_size=4)
        >>> _ = rb.extend(TensorDict(obs=torch.zeros(8, 2), batch_size=[8]))
        >>> batch = rb.sample()
        >>> batch["td_error"] = torch.rand(4)
        >>> rb.update_tensordict_priority(batch)
        >>> sorted(batch.keys())
        ['index', 'obs', 'priority_weight', 'td_error']
    """

    def __init__(
        self,
        *,
        alpha: float,
        beta: float,
        priority_key: NestedKey = "td_error",
        eps: float = 1e-8,
        storage: Storage | None = None,
        reduction: str = "max",
        sampler_device: Any = None,
        sync: bool = True,
        **kwargs: Any,
    ) -> None:
        _require_sync(sync)
        storage = storage if storage is not None else ListStorage(1000)
        sampler = _prioritized_sampler(
            storage, alpha, beta, eps, torch.float, reduction=reduction, device=sampler_device
        )
        super().__init__(priority_key=priority_key, storage=storage, sampler=sampler, **kwargs)


def _to_batch(value: torch.Tensor, batch: torch.Size) -> torch.Tensor:
    """Lays a per-item info entry (``[numel, *feature]``) out as ``[*batch, *feature]``.

    The feature dims are kept: a sampler's ``("next", "done")`` marker is ``[B, 1]`` like the stored
    flags it replaces (squeezing it to ``[B]`` would broadcast against ``[B, 1]`` rewards in a loss).
    """
    if value.shape[: len(batch)] == batch:
        return value
    if value.ndim and value.shape[0] == batch.numel():
        return value.reshape(*batch, *value.shape[1:])
    return value.reshape(batch) if value.numel() == batch.numel() else value

