"""Prioritized experience replay: :class:`PrioritizedSampler`.

Schaul et al., "Prioritized Experience Replay", 2015 (https://arxiv.org/abs/1511.05952).
Item ``i`` with raw priority ``p_i`` is stored as ``q_i = (p_i + eps) ** alpha`` and drawn with
probability ``q_i / sum_j q_j``; its importance weight is ``(q_i / min_j q_j) ** -beta``, which is
TorchRL's ``(N * P(i)) ** -beta / max_k (N * P(k)) ** -beta`` with the ``N`` and ``sum`` cancelled.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch

from tdrl._utils.safe_files import read_json
from tdrl.data.replay_buffers.samplers.base import EMPTY_STORAGE_ERROR, Sampler
from tdrl.data.replay_buffers.samplers.segment_tree import (
    MinSegmentTree,
    SumSegmentTree,
    dedupe_last,
    write_trees,
)

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["PrioritizedSampler"]

_REDUCTIONS = ("max", "min", "median", "mean")
_STATE_SCHEMA_VERSION = 1


def _write_raw_atomic(path: Path, values: torch.Tensor) -> None:
    tmp = path.with_name(path.name + ".tmp")
    values.detach().to(torch.float64).cpu().numpy().tofile(tmp)
    os.replace(tmp, path)


def flat_priority_index(
    index: int | torch.Tensor | tuple, priority: float | torch.Tensor, storage: Storage | _Shape | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Normalises ``(index, priority)`` to a flat 1-D long index and a matching priority tensor.

    Multi-dimensional indices (``[B, ndim]`` tensors or tuples of ``ndim`` tensors) are raveled
    with ``storage.shape``. Negative indices (written as ``-1`` by ``MaxValueWriter`` for items it
    did not store) are dropped, as in TorchRL.

    Examples:
        >>> flat_priority_index(torch.tensor([2, -1, 0]), 3.0, None)
        (tensor([2, 0]), tensor([3., 3.]))
    """
    if isinstance(index, tuple):
        index = torch.stack([torch.as_tensor(i, dtype=torch.long) for i in index], -1)
    # The trees live on CPU: indices and priorities from a CUDA storage or loss come back here.
    index = torch.as_tensor(index, dtype=torch.long).cpu()
    priority = torch.as_tensor(priority).detach().cpu()
    if priority.is_floating_point() is False:
        priority = priority.to(torch.get_default_dtype())
    if index.ndim > 1:
        if storage is None:
            raise RuntimeError(
                "update_priority got a multi-dimensional index: pass storage= so that it can be "
                "mapped onto the flat priority tree."
            )
        shape = tuple(storage.shape)
        if index.shape[-1] != len(shape):
            raise ValueError(
                f"index has {index.shape[-1]} coordinates per item but the storage has {len(shape)} dims."
            )
        strides = torch.tensor([math.prod(shape[d + 1 :]) for d in range(len(shape))])
        valid = (index >= 0).all(-1)
        index = torch.where(valid, (index * strides).sum(-1), -1)
    index = index.reshape(-1)
    if priority.numel() > 1:
        if priority.numel() != index.numel():
            raise ValueError(
                "priority should be a number or hold one value per index: got priority of shape "
                f"{tuple(priority.shape)} for {index.numel()} indices."
            )
        priority = priority.reshape(-1)
    else:
        priority = priority.reshape(()).expand(index.shape)
    if index.numel() and int(index.min()) < 0:
        keep = index >= 0
        index, priority = index[keep], priority[keep]
    return index, priority


class _Shape:
    """Stands for a storage when only its shape is needed to ravel indices."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape


class PrioritizedSampler(Sampler):
    r"""Prioritized sampler: draws item ``i`` with probability ``(p_i + eps)^alpha / sum``.

    New items get the largest raw priority seen so far (``default_priority``, 1.0 at first), so
    each is likely to be replayed at least once. The sum and min trees are pure-torch batched
    :class:`~tdrl.data.replay_buffers.samplers.segment_tree.SumSegmentTree` /
    :class:`~tdrl.data.replay_buffers.samplers.segment_tree.MinSegmentTree`: no C++ build.

    Args:
        max_capacity: number of items the buffer can hold (size of the priority trees).
        alpha: priority exponent (0: uniform, 1: fully proportional).
        beta: importance-sampling exponent; ``info["priority_weight"] = (q_i / q_min) ** -beta``.
        eps: added to every raw priority before the exponent. Defaults to ``1e-8``.
        dtype: precision of the stored priorities, ``torch.float`` or ``torch.double``.
        reduction: how a TensorDict replay buffer reduces per-step priorities of a stored
            trajectory, one of ``"max"``, ``"min"``, ``"median"``, ``"mean"``.
        max_priority_within_buffer: if ``True``, the default priority is the max over items still
            in the buffer; otherwise the max since construction.
        device: kept for TorchRL compatibility; trees live on CPU.

    Examples:
        >>> import torch
        >>> from tdrl.data import LazyTensorStorage
        >>> storage = LazyTensorStorage(4)
        >>> storage.set(torch.arange(4), torch.zeros(4))
        >>> sampler = PrioritizedSampler(4, alpha=1.0, beta=1.0)
        >>> sampler.update_priority(torch.arange(4), torch.tensor([0.0, 0.0, 1.0, 3.0]))
        >>> index, info = sampler.sample(storage, 6)
        >>> sorted(set(index.tolist())) in ([2, 3], [3])
        True
        >>> info["priority_weight"].dtype
        torch.float32
    """

    def __init__(
        self,
        max_capacity: int,
        alpha: float,
        beta: float,
        eps: float = 1e-8,
        dtype: torch.dtype = torch.float,
        reduction: Literal["max", "min", "median", "mean"] = "max",
        max_priority_within_buffer: bool = False,
        device: torch.device | str | None = None,
    ) -> None:
        if isinstance(max_capacity, bool) or not isinstance(max_capacity, (int, np.integer)) or max_capacity <= 0:
            raise ValueError(f"max_capacity must be a positive int, got {max_capacity!r}.")
        if alpha < 0:
            raise ValueError(f"alpha must be greater or equal than 0, got alpha={alpha}")
        if beta < 0:
            raise ValueError(f"beta must be greater or equal to 0, got beta={beta}")
        if not eps >= 0:
            raise ValueError(f"eps must be a non-negative float, got eps={eps}")
        if reduction not in _REDUCTIONS:
            raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}.")
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype {dtype} not supported by PrioritizedSampler: use torch.float or torch.double.")
        self._max_capacity = int(max_capacity)
        self._alpha = alpha
        self._beta = beta
        self._eps = eps
        self.reduction = reduction
        self.dtype = dtype
        self._max_priority_within_buffer = max_priority_within_buffer
        self._device = torch.device(device) if device is not None else None
        self._init()

    def _init(self) -> None:
        self._sum_tree = SumSegmentTree(self._max_capacity, dtype=self.dtype)
        self._min_tree = MinSegmentTree(self._max_capacity, dtype=self.dtype)
        # (raw max priority, flat index holding it) or None before any update.
        self._max_priority: tuple[float, int] | None = None
        # shape of the last multi-dimensional storage seen, to ravel write indices
        self._storage_shape: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(alpha={self._alpha}, beta={self._beta}, eps={self._eps}, "
            f"reduction={self.reduction})"
        )

    @property
    def max_size(self) -> int:
        """Capacity of the priority trees."""
        return self._max_capacity

    @property
    def device(self) -> torch.device:
        """Device of the priority trees (always CPU)."""
        return torch.device("cpu")

    @property
    def alpha(self) -> float:
        """Priority exponent; setting it re-transforms the stored priorities in one pass."""
        return self._alpha

    @alpha.setter
    def alpha(self, value: float) -> None:
        if value < 0:
            raise ValueError(f"alpha must be greater or equal than 0, got alpha={value}")
        old, self._alpha = self._alpha, value
        if value != old:
            self._retransform(old, value)

    @property
    def beta(self) -> float:
        """Importance-sampling exponent."""
        return self._beta

    @beta.setter
    def beta(self, value: float) -> None:
        if value < 0:
            raise ValueError(f"beta must be greater or equal to 0, got beta={value}")
        self._beta = value

    @property
    def default_priority(self) -> float:
        """Raw priority given to new items: the max seen so far, 1.0 before any update."""
        return 1.0 if self._max_priority is None else self._max_priority[0]

    def _raw_from_tree(self, values: torch.Tensor, alpha: float) -> torch.Tensor:
        return (values.double() ** (1.0 / alpha) - self._eps).clamp_min(0)

    def _retransform(self, old_alpha: float, new_alpha: float) -> None:
        stored = self._sum_tree.leaves()
        written = stored > 0
        if not bool(written.any()):
            return
        if old_alpha == 0:
            # (p + eps) ** 0 == 1 for every item: raw priorities are lost; entries keep a uniform
            # value until their next update (TorchRL behaves the same).
            return
        new = torch.where(written, (self._raw_from_tree(stored, old_alpha) + self._eps) ** new_alpha, 0.0)
        self._sum_tree.rebuild(new)
        self._min_tree.rebuild(torch.where(written, new, math.inf))

    def _tree_argmax(self) -> tuple[float, int]:
        value, index = self._sum_tree.leaves().max(0)
        return float(value), int(index)

    def _priority_mass(self, storage: Storage) -> tuple[int, float, float]:
        n = len(storage)
        if n == 0:
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        if n > self._max_capacity:
            raise RuntimeError(
                f"the storage holds {n} items but the sampler's max_capacity is {self._max_capacity}."
            )
        p_sum = self._sum_tree.query(0, n)
        p_min = self._min_tree.query(0, n)
        if p_sum <= 0:
            raise RuntimeError(
                "non-positive p_sum: every stored item has priority 0 (were the writes reported to the "
                "sampler via extend/mark_update?)."
            )
        if not p_min > 0 or math.isinf(p_min):
            raise RuntimeError(f"non-positive or undefined p_min ({p_min}) over the {n} stored items.")
        return n, p_sum, p_min

    def _draw(self, n: int, p_sum: float, batch_size: int) -> torch.Tensor:
        # float64 masses: in float32 the prefix sums of a 1e6-item tree lose the low priorities' mass.
        mass = torch.rand(batch_size, generator=self._rng, dtype=torch.float64) * p_sum
        return self._sum_tree.scan_lower_bound(mass, upper=n)

    def _weights(self, index: torch.Tensor, p_min: float) -> torch.Tensor:
        # w_i = (N P(i))^-beta / max_j w_j = (p_i / p_min)^-beta: Schaul et al. 2015, section 3.4 (weights only
        # scale updates down); the max is over the whole buffer, as TorchRL, not over the batch.
        return (self._sum_tree.leaves()[index] / p_min).pow(-self._beta).to(self.dtype)

    def sample(self, storage: Storage, batch_size: int) -> tuple[torch.Tensor | tuple, dict]:
        n, p_sum, p_min = self._priority_mass(storage)
        index = self._draw(n, p_sum, batch_size)
        weight = self._weights(index, p_min)
        if storage.ndim > 1:
            return torch.unravel_index(index, tuple(storage.shape)), {"priority_weight": weight}
        return index, {"priority_weight": weight}

    def _overwrites_max(self, index: Any, target: int) -> bool:
        """Whether a write at ``index`` may have overwritten the item at ``target`` (the max priority)."""
        if isinstance(index, slice):
            return target in range(*index.indices(self._max_capacity))
        if isinstance(index, tuple) or torch.as_tensor(index).ndim > 1:
            if self._storage_shape is None:
                return True
            index, _ = flat_priority_index(index, 0.0, _Shape(self._storage_shape))
        return bool((torch.as_tensor(index) == target).any())

    def _maybe_erase_max_priority(self, index: Any) -> None:
        tracked = self._max_priority
        if self._max_priority_within_buffer and tracked is not None and self._overwrites_max(index, tracked[1]):
            self._max_priority = None

    def add(self, index: int | torch.Tensor) -> None:
        super().add(index)
        self._maybe_erase_max_priority(index)

    def extend(self, index: torch.Tensor) -> None:
        super().extend(index)
        self._maybe_erase_max_priority(index)

    def _validate_priority(self, index: torch.Tensor, priority: torch.Tensor) -> None:
        # One min/max pass per tensor: NaN propagates through both, so it fails the range checks.
        top = int(index.max())
        if top >= self._max_capacity:
            raise IndexError(
                f"update_priority got index {top}, out of range for max_capacity="
                f"{self._max_capacity} (expected 0 <= index < {self._max_capacity})."
            )
        low, high = (float(v) for v in torch.aminmax(priority))
        if not (low >= 0 and high < math.inf):
            bad = priority[~((priority >= 0) & (priority < math.inf))][:5]
            raise ValueError(
                f"update_priority expects finite priorities >= 0 (no NaN, inf or negative values), got {bad}."
            )

    @torch.no_grad()
    def update_priority(
        self,
        index: int | torch.Tensor | tuple,
        priority: float | torch.Tensor,
        *,
        storage: Storage | None = None,
    ) -> None:
        """Sets the raw priority of ``index`` (stored as ``(priority + eps) ** alpha``).

        Args:
            index: flat index/indices, a ``[B, ndim]`` tensor or a tuple of per-dim indices.
                Negative entries are ignored.
            priority: one value, or one per index. Must be finite and ``>= 0``.

        Keyword Args:
            storage: needed to ravel multi-dimensional indices.

        Raises:
            IndexError: an index is ``>= max_capacity``.
            ValueError: a priority is NaN, infinite or negative. Nothing is written in either case.
        """
        if storage is not None and storage.ndim > 1:
            self._storage_shape = tuple(storage.shape)
        index, priority = flat_priority_index(index, priority, storage)
        if not index.numel():
            return
        self._validate_priority(index, priority)
        index, priority = dedupe_last(index, priority)
        top, arg = priority.max(0)
        max_p, max_i = float(top), int(index[arg])
        tracked = self._max_priority
        if tracked is None or max_p > tracked[0]:
            tracked = self._max_priority = (max_p, max_i)
        self._write_priorities(index, torch.pow(priority + self._eps, self._alpha))
        if self._max_priority_within_buffer and self._alpha != 0 and bool(torch.eq(index, tracked[1]).any()):
            # The tracked max may have been lowered: recompute it from the tree (raw domain).
            value, where = self._tree_argmax()
            self._max_priority = (float(self._raw_from_tree(torch.tensor(value), self._alpha)), where)

    def _write_priorities(self, index: torch.Tensor, stored: torch.Tensor) -> None:
        """Writes transformed priorities at unique, validated flat ``index``."""
        write_trees((self._sum_tree, self._min_tree), index, stored)

    def mark_update(self, index: int | torch.Tensor, *, storage: Storage | None = None) -> None:
        """Gives freshly written items the default (max) priority."""
        self.update_priority(index, self.default_priority, storage=storage)

    def _empty(self) -> None:
        self._init()

    def state_dict(self) -> dict[str, Any]:
        return {
            "_schema_version": _STATE_SCHEMA_VERSION,
            "_alpha": self._alpha,
            "_beta": self._beta,
            "_eps": self._eps,
            "_max_priority": self._max_priority,
            "_sum_tree": self._sum_tree.state_dict(),
            "_min_tree": self._min_tree.state_dict(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._alpha = state_dict["_alpha"]
        self._beta = state_dict["_beta"]
        self._eps = state_dict["_eps"]
        max_priority = state_dict["_max_priority"]
        self._max_priority = None if max_priority is None else (float(max_priority[0]), int(max_priority[1]))
        self._sum_tree.load_state_dict(state_dict["_sum_tree"])
        self._min_tree.load_state_dict(state_dict["_min_tree"])

    def dumps(self, path: str | os.PathLike) -> None:
        """Writes ``sumtree.memmap`` / ``mintree.memmap`` (raw float64) and ``sampler_metadata.json``."""
        path = Path(path).absolute()
        path.mkdir(parents=True, exist_ok=True)
        _write_raw_atomic(path / "sumtree.memmap", self._sum_tree.leaves())
        _write_raw_atomic(path / "mintree.memmap", self._min_tree.leaves())
        metadata = {
            "_alpha": float(self._alpha),
            "_beta": float(self._beta),
            "_eps": float(self._eps),
            "_max_priority": None if self._max_priority is None else [float(v) for v in self._max_priority],
            "_max_capacity": float(self._max_capacity),
            "_schema_version": _STATE_SCHEMA_VERSION,
        }
        tmp = path / "sampler_metadata.json.tmp"
        tmp.write_text(json.dumps(metadata))
        os.replace(tmp, path / "sampler_metadata.json")

    def loads(self, path: str | os.PathLike) -> None:
        """Reads a directory written by :meth:`dumps`."""
        path = Path(path).absolute()
        metadata = read_json(path / "sampler_metadata.json", what="sampler metadata")
        if int(metadata["_max_capacity"]) != self._max_capacity:
            raise RuntimeError(
                f"max capacity of loaded metadata ({int(metadata['_max_capacity'])}) differs from "
                f"self._max_capacity ({self._max_capacity})."
            )
        self._alpha = metadata["_alpha"]
        self._beta = metadata["_beta"]
        self._eps = metadata["_eps"]
        max_priority = metadata["_max_priority"]
        self._max_priority = None if max_priority is None else (float(max_priority[0]), int(max_priority[1]))
        for name, tree in (("sumtree", self._sum_tree), ("mintree", self._min_tree)):
            leaves = np.fromfile(path / f"{name}.memmap", dtype=np.float64)
            if leaves.size != self._max_capacity:
                raise RuntimeError(f"{name}.memmap holds {leaves.size} values, expected {self._max_capacity}.")
            tree.rebuild(torch.from_numpy(leaves))
