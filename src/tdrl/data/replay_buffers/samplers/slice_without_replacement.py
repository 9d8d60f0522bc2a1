"""Slices without replacement: :class:`SliceSamplerWithoutReplacement`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict.utils import NestedKey

from tdrl.data.replay_buffers.samplers.base import register_without_replacement
from tdrl.data.replay_buffers.samplers.slice import SliceSampler
from tdrl.data.replay_buffers.samplers.without_replacement import SamplerWithoutReplacement

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["SliceSamplerWithoutReplacement"]


class SliceSamplerWithoutReplacement(SliceSampler, SamplerWithoutReplacement):
    """Samples one slice per trajectory, visiting every trajectory once per epoch.

    An epoch is a permutation of the stored trajectories (not of the items): each batch takes the
    next ``num_slices`` trajectories and draws one slice in each, so a batch never holds two
    slices of the same trajectory. :attr:`ran_out` is set on the batch that completes an epoch
    (see :class:`~tdrl.data.SamplerWithoutReplacement`); a change in the number of trajectories
    restarts the epoch. With ``strict_length=True`` the trajectories shorter than the slice are
    skipped, so a batch can hold fewer than ``batch_size`` items.

    Keyword Args:
        num_slices: number of slices (trajectories) per batch. Exclusive with ``slice_len``.
        slice_len: length of each slice. Exclusive with ``num_slices``.
        drop_last: drop the incomplete last batch of an epoch. Defaults to ``False``.
        end_key, end_keys, traj_key, ends: as in :class:`~tdrl.data.SliceSampler`; so are
            ``trajectories``, ``truncated_key``, ``init_key``, ``strict_length``, ``compile`` and ``use_gpu``.
        shuffle: draw trajectories in random order (``False``: storage order). Defaults to ``True``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> storage = LazyTensorStorage(100)
        >>> storage.set(torch.arange(30), TensorDict({"episode": torch.arange(30) // 10}, [30]))
        >>> sampler = SliceSamplerWithoutReplacement(num_slices=2, shuffle=False)
        >>> (index,), _ = sampler.sample(storage, 8)
        >>> (index // 10).tolist(), sampler.ran_out
        ([0, 0, 0, 0, 1, 1, 1, 1], False)
        >>> (index,), _ = sampler.sample(storage, 8)
        >>> (index // 10).tolist(), sampler.ran_out
        ([2, 2, 2, 2], True)
    """

    def __init__(
        self,
        *,
        num_slices: int | None = None,
        slice_len: int | None = None,
        drop_last: bool = False,
        end_key: NestedKey | None = None,
        end_keys: Sequence[NestedKey] | None = None,
        traj_key: NestedKey | None = None,
        ends: torch.Tensor | None = None,
        trajectories: torch.Tensor | None = None,
        truncated_key: NestedKey | None = ("next", "truncated"),
        init_key: NestedKey | None = "is_init",
        strict_length: bool = True,
        shuffle: bool = True,
        compile: bool | dict = False,
        use_gpu: bool | torch.device = False,
    ) -> None:
        SliceSampler.__init__(
            self,
            num_slices=num_slices,
            slice_len=slice_len,
            end_key=end_key,
            end_keys=end_keys,
            traj_key=traj_key,
            cache_values=True,
            truncated_key=truncated_key,
            init_key=init_key,
            strict_length=strict_length,
            ends=ends,
            trajectories=trajectories,
            compile=compile,
            use_gpu=use_gpu,
        )
        SamplerWithoutReplacement.__init__(self, drop_last=drop_last, shuffle=shuffle)

    def _storage_len(self, storage: Storage) -> int:
        # Epochs run over trajectories, not items.
        return self._boundaries(storage).lengths.numel() if len(storage) else 0

    def sample(self, storage: Storage, batch_size: int) -> tuple[tuple[torch.Tensor, ...], dict]:
        bounds, seq_length, num_slices = self._prepare(storage, batch_size)
        traj_idx = self._next_positions(storage, num_slices)
        if self.strict_length:
            traj_idx = traj_idx[bounds.lengths[traj_idx] >= seq_length]
            if not traj_idx.numel():
                raise RuntimeError(
                    "None of the provided indices pointed to a trajectory of sufficient length. "
                    "Consider using strict_length=False for the sampler instead."
                )
        return self._slices(bounds, traj_idx, seq_length, storage)

    def _empty(self) -> None:
        SliceSampler._empty(self)
        SamplerWithoutReplacement._empty(self)

    def state_dict(self) -> dict[str, Any]:
        return SamplerWithoutReplacement.state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        SamplerWithoutReplacement.load_state_dict(self, state_dict)

    def dumps(self, path: Any) -> None:
        SamplerWithoutReplacement.dumps(self, path)

    def loads(self, path: Any) -> None:
        SamplerWithoutReplacement.loads(self, path)

    def __repr__(self) -> str:
        left = 0 if self._sample_list is None else self._sample_list.numel()
        done = 0.0 if not self.len_storage else 100 * (1 - left / self.len_storage)
        return (
            f"{type(self).__name__}(num_slices={self.num_slices}, slice_len={self.slice_len}, "
            f"end_key={self.end_key}, traj_key={self.traj_key}, truncated_key={self.truncated_key}, "
            f"strict_length={self.strict_length}, {done:.1f}% sampled)"
        )


register_without_replacement(SliceSampler, SliceSamplerWithoutReplacement)
