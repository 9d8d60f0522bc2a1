"""Epoch-based sampling without replacement: :class:`SamplerWithoutReplacement`."""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import torch

from tdrl.data.replay_buffers.samplers._checkpoint import load_state, save_state
from tdrl.data.replay_buffers.samplers.base import (
    EMPTY_STORAGE_ERROR,
    EpochSampler,
    register_without_replacement,
)
from tdrl.data.replay_buffers.samplers.random import RandomSampler

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["SamplerWithoutReplacement"]

_CHECKPOINT_FILE = "sampler_without_replacement.pt"


class SamplerWithoutReplacement(EpochSampler):
    """Visits every stored item once per epoch, in random (or storage) order.

    The sampler keeps the not-yet-visited indices of the current epoch. Each :meth:`sample` pops
    ``batch_size`` of them; when fewer than one more batch remains (none, or fewer than
    ``batch_size`` with ``drop_last=True``) it sets :attr:`ran_out` -- which ends a replay buffer's
    ``__iter__`` -- and draws the next epoch's order. With ``drop_last=False`` the last batch of an
    epoch may be shorter than ``batch_size``.

    If the number of stored items changes between two calls, the epoch restarts over the new
    content (the sampler cannot tell which items are new). Overwrites that keep the length
    (a full ring buffer) continue the current epoch.

    Args:
        drop_last: drop the incomplete last batch of an epoch. Defaults to ``False``.
        shuffle: draw a random permutation per epoch; ``False`` iterates in storage order.
            Defaults to ``True``.

    Examples:
        >>> import torch
        >>> from tdrl.data import LazyTensorStorage
        >>> storage = LazyTensorStorage(10)
        >>> storage.set(torch.arange(5), torch.arange(5))
        >>> sampler = SamplerWithoutReplacement(shuffle=False)
        >>> sampler.sample(storage, 2)[0], sampler.sample(storage, 2)[0], sampler.sample(storage, 2)[0]
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
        >>> sampler.ran_out
        True
    """

    def __init__(self, drop_last: bool = False, shuffle: bool = True) -> None:
        self._sample_list: torch.Tensor | None = None
        self.len_storage = 0
        self.drop_last = bool(drop_last)
        self.shuffle = bool(shuffle)
        self._ran_out = False

    def _storage_len(self, storage: Storage) -> int:
        return len(storage)

    def _new_epoch(self, len_storage: int, batch_size: int, device: torch.device | None) -> torch.Tensor:
        if self.shuffle:
            sample_list = torch.randperm(len_storage, generator=self._rng, device=device)
        else:
            sample_list = torch.arange(len_storage, device=device)
        self._sample_list = sample_list
        self._set_remaining(batch_size, sample_list.numel())
        return sample_list

    def _set_remaining(self, batch_size: int, left: int) -> None:
        self._remaining_batches = left // batch_size if self.drop_last else -(left // -batch_size)

    def can_sample(self, storage: Storage, batch_size: int) -> bool:
        """Whether ``storage`` holds enough items for one batch."""
        n = self._storage_len(storage)
        return n >= batch_size if self.drop_last else n > 0

    def _next_positions(self, storage: Storage, batch_size: int) -> torch.Tensor:
        """Pops the next ``batch_size`` positions of the epoch (positions in ``[0, _storage_len)``)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}.")
        len_storage = self._storage_len(storage)
        if len_storage == 0:
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        if self.drop_last and len_storage < batch_size:
            raise ValueError(
                f"The batch size ({batch_size}) is greater than the storage capacity ({len_storage}). "
                "This makes it impossible to return a sample without repeating indices. "
                "Consider changing the sampler class or turn the 'drop_last' argument to False."
            )
        sample_list = self._sample_list
        if self.len_storage != len_storage or sample_list is None:
            device = getattr(storage, "device", None)
            sample_list = self._new_epoch(len_storage, batch_size, device if isinstance(device, torch.device) else None)
        self.len_storage = len_storage
        index = sample_list[:batch_size]
        self._sample_list = sample_list = sample_list[batch_size:]
        left = sample_list.numel()
        self._set_remaining(batch_size, left)
        if left == 0 or (self.drop_last and left < batch_size):
            self._ran_out = True
            self._new_epoch(len_storage, batch_size, index.device)
        else:
            self._ran_out = False
        return index

    def sample(self, storage: Storage, batch_size: int) -> tuple[Any, dict]:
        index = self._next_positions(storage, batch_size)
        if storage.ndim > 1:
            return torch.unravel_index(index, tuple(storage.shape)), {}
        return index, {}

    def _empty(self) -> None:
        self._sample_list = None
        self.len_storage = 0
        self._ran_out = False

    def state_dict(self) -> dict[str, Any]:
        return OrderedDict(
            len_storage=self.len_storage,
            _sample_list=None if self._sample_list is None else self._sample_list.clone(),
            drop_last=self.drop_last,
            shuffle=self.shuffle,
            _ran_out=self._ran_out,
        )

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.len_storage = int(state_dict["len_storage"])
        sample_list = state_dict["_sample_list"]
        self._sample_list = None if sample_list is None else torch.as_tensor(sample_list).clone()
        self.drop_last = bool(state_dict["drop_last"])
        self.shuffle = bool(state_dict.get("shuffle", self.shuffle))
        self._ran_out = bool(state_dict["_ran_out"])

    def dumps(self, path: str | os.PathLike) -> None:
        save_state(path, _CHECKPOINT_FILE, dict(self.state_dict()))

    def loads(self, path: str | os.PathLike) -> None:
        self.load_state_dict(load_state(path, _CHECKPOINT_FILE))

    def __repr__(self) -> str:
        left = 0 if self._sample_list is None else self._sample_list.numel()
        done = 0.0 if not self.len_storage else 100 * (1 - left / self.len_storage)
        return f"{type(self).__name__}(drop_last={self.drop_last}, shuffle={self.shuffle}, {done:.1f}% sampled)"


register_without_replacement(RandomSampler, SamplerWithoutReplacement)
