"""``StalenessAwareSampler``: favour data from recent policy versions (asynchronous training)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tensordict import NestedKey

from tdrl.data.replay_buffers.checkpointers import load_json, save_json
from tdrl.data.replay_buffers.samplers._storage_read import read_written
from tdrl.data.replay_buffers.samplers.base import EMPTY_STORAGE_ERROR, Sampler

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["StalenessAwareSampler"]


def _default_staleness_weight(staleness: torch.Tensor) -> torch.Tensor:
    # 1 / (staleness + 1), as TorchRL; data newer than the consumer counts as fresh (TorchRL divides by 0).
    return 1.0 / (staleness.float().clamp(min=0) + 1.0)


class StalenessAwareSampler(Sampler):
    """Samples stored items with weights that decay with their staleness.

    Staleness is ``consumer_version - item[version_key]``: the training loop advances
    :attr:`consumer_version` (e.g. once per optimisation step) and the collector stamps each item
    with the version of the policy that produced it. Items staler than ``max_staleness`` are never
    drawn; the others are drawn with probability proportional to ``staleness_weight_fn(staleness)``
    (default ``1 / (staleness + 1)``), without replacement unless the batch is larger than the
    eligible items. The info dict (hence a TensorDict batch) carries each item's ``"staleness"``.

    Args:
        max_staleness: the staleness cutoff; ``-1`` (default) keeps every item.
        staleness_weight_fn: maps a staleness tensor to non-negative weights.
        version_key: the stored policy version. Defaults to ``"policy_version"``.

    Examples:
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
        >>> sampler = StalenessAwareSampler(max_staleness=1)
        >>> rb = TensorDictReplayBuffer(storage=LazyTensorStorage(8), sampler=sampler, batch_size=4)
        >>> _ = rb.extend(TensorDict(policy_version=torch.tensor([0, 0, 1, 2, 2, 3]), batch_size=[6]))
        >>> sampler.consumer_version = 3
        >>> batch = rb.sample()
        >>> set(batch["policy_version"].tolist()) <= {2, 3}, bool((batch["staleness"] <= 1).all())
        (True, True)
    """

    def __init__(
        self,
        max_staleness: int = -1,
        staleness_weight_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
        version_key: NestedKey = "policy_version",
    ) -> None:
        if int(max_staleness) != max_staleness or max_staleness < -1:
            raise ValueError(f"max_staleness must be -1 (no cutoff) or a non-negative int, got {max_staleness!r}.")
        self._consumer_version = 0
        self._max_staleness = int(max_staleness)
        self._version_key = version_key
        self._weight_fn = _default_staleness_weight if staleness_weight_fn is None else staleness_weight_fn

    @property
    def consumer_version(self) -> int:
        """The version of the policy being trained (staleness is measured from it)."""
        return self._consumer_version

    @consumer_version.setter
    def consumer_version(self, value: int) -> None:
        self._consumer_version = value

    def increment_consumer_version(self) -> None:
        """Advances :attr:`consumer_version` by one."""
        self._consumer_version += 1

    @property
    def max_staleness(self) -> int:
        """The staleness cutoff (``-1``: none)."""
        return self._max_staleness

    @max_staleness.setter
    def max_staleness(self, value: int) -> None:
        self._max_staleness = value

    def _versions(self, storage: Storage) -> torch.Tensor:
        try:
            return read_written(storage, self._version_key)
        except KeyError:
            raise KeyError(
                f"StalenessAwareSampler: no {self._version_key!r} entry in the storage; stamp the written data with "
                "the policy version (e.g. the PolicyVersion transform)."
            ) from None

    def sample(self, storage: Storage, batch_size: int) -> tuple[Any, dict]:
        n = len(storage)
        if n == 0:
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        staleness = self._consumer_version - self._versions(storage).reshape(-1).float()
        if self._max_staleness >= 0:
            valid = (staleness <= self._max_staleness).nonzero().reshape(-1)
            if not valid.numel():
                raise RuntimeError(
                    f"StalenessAwareSampler: all {staleness.numel()} items exceed max_staleness="
                    f"{self._max_staleness} (consumer_version={self._consumer_version})."
                )
        else:
            valid = torch.arange(staleness.numel())
        weights = torch.as_tensor(self._weight_fn(staleness[valid]), dtype=torch.float)
        if weights.shape != valid.shape or bool((weights < 0).any()) or not bool(weights.sum() > 0):
            raise ValueError(
                f"staleness_weight_fn must return {valid.numel()} non-negative weights with a positive sum, "
                f"got shape {tuple(weights.shape)}."
            )
        drawn = torch.multinomial(weights / weights.sum(), batch_size, replacement=batch_size > valid.numel(),
                                  generator=self._rng)
        flat = valid[drawn]
        index: Any = flat
        if storage.ndim > 1:
            index = torch.unravel_index(flat, (storage._len_along_dim0, *storage.shape[1:]))
        return index, {"staleness": staleness[flat]}

    def _sampleable_count(self, storage: Storage, batch_size: int) -> int:
        if not len(storage) or self._max_staleness < 0:
            return len(storage)
        try:
            staleness = self._consumer_version - self._versions(storage).reshape(-1).float()
        except KeyError:
            return 0
        return int((staleness <= self._max_staleness).sum())

    def _empty(self) -> None:
        self._consumer_version = 0

    def state_dict(self) -> dict[str, Any]:
        return {"consumer_version": self._consumer_version, "max_staleness": self._max_staleness}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._consumer_version = int(state_dict["consumer_version"])
        self._max_staleness = int(state_dict["max_staleness"])

    def dumps(self, path: Any) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)
        save_json(Path(path) / "sampler.json", self.state_dict())

    def loads(self, path: Any) -> None:
        self.load_state_dict(load_json(Path(path) / "sampler.json"))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(consumer_version={self._consumer_version}, max_staleness={self._max_staleness})"
