"""``StorageEnsemble``: several storages read together, each addressed by its buffer id."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from tdrl.data.replay_buffers.storages.base import Storage
from tdrl.data.replay_buffers.utils import members_rng

__all__ = ["StorageEnsemble"]


def _member_ids(index: Any, n: int, kind: str) -> list[int] | slice | int:
    """Normalises an ensemble index (int, slice, list, range, array, 1-D tensor) into ints or a slice."""
    if isinstance(index, slice):
        return index
    if isinstance(index, (list, range, np.ndarray)):
        index = torch.as_tensor(index, dtype=torch.long if len(index) == 0 else None)
    if isinstance(index, torch.Tensor):
        if index.ndim > 1:
            raise IndexError(f"A {kind} is indexed by 1-D member ids, got a tensor of shape {tuple(index.shape)}.")
        if index.is_floating_point():
            raise TypeError(f"A {kind} is indexed by integer member ids, got dtype {index.dtype}.")
        if index.ndim == 0:
            index = int(index)
        else:
            ids = index.tolist()
            bad = [i for i in ids if not -n <= i < n]
            if bad:
                raise IndexError(f"{kind} member ids {bad} out of range for {n} members.")
            return ids
    if isinstance(index, int):
        if not -n <= index < n:
            raise IndexError(f"{kind} member id {index} out of range for {n} members.")
        return index
    raise IndexError(f"A {kind} is indexed by an int, slice, list or 1-D tensor of member ids, got {type(index).__name__}.")


class StorageEnsemble(Storage):
    """A read-only group of storages, one per buffer of a :class:`~tdrl.data.ReplayBufferEnsemble`.

    ``get`` takes what :class:`~tdrl.data.SamplerEnsemble` samples, a TensorDict with ``"buffer_ids"``
    (one per row) and ``"index"`` (the row's indices in that storage), and returns one
    ``(buffer_id, data)`` pair per row, as TorchRL does; a ``(storage_ids, indices)`` pair of flat
    tensors returns one read per distinct storage instead. ``ensemble[i]`` is the i-th storage,
    ``ensemble[[i, j]]`` (or a slice) a smaller ensemble. Writes go to the member storages.

    Args:
        *storages: the member storages.

    Keyword Args:
        transforms: one callable (or ``None``) per storage, applied to what it returns.

    Examples:
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> s0, s1 = LazyTensorStorage(4), LazyTensorStorage(4)
        >>> s0.set(torch.arange(2), torch.zeros(2)); s1.set(torch.arange(2), torch.ones(2))
        >>> ens = StorageEnsemble(s0, s1)
        >>> ens.get((torch.tensor([1, 0]), torch.tensor([0, 1])))
        [tensor([1.]), tensor([0.])]
        >>> ens.get(TensorDict(buffer_ids=torch.tensor([1]), index=torch.tensor([[0, 1]]), batch_size=[1]))
        [(1, tensor([1., 1.]))]
    """

    def __init__(self, *storages: Storage, transforms: Sequence[Callable | None] | None = None) -> None:
        if not storages:
            raise ValueError("StorageEnsemble needs at least one storage.")
        bad = [type(s).__name__ for s in storages if not isinstance(s, Storage)]
        if bad:
            raise TypeError(f"StorageEnsemble members must be Storage instances, got {bad}.")
        super().__init__(sum(s.max_size for s in storages))
        self._storages = list(storages)
        if transforms is not None and len(transforms) != len(storages):
            raise ValueError(f"Got {len(transforms)} transforms for {len(storages)} storages.")
        self._transforms = list(transforms) if transforms is not None else [None] * len(storages)

    _rng = members_rng("_storages")

    def set(self, cursor: Any, data: Any, *, set_cursor: bool = True) -> None:
        raise TypeError("StorageEnsemble is read-only: write to its member storages.")

    def _read(self, sid: int, idx: Any) -> Any:
        if not 0 <= sid < len(self._storages):
            raise IndexError(f"storage id {sid} out of range for {len(self._storages)} storages.")
        data = self._storages[sid].get(idx)
        transform = self._transforms[sid]
        return transform(data) if transform is not None else data

    def get(self, index: Any) -> Any:
        """Reads member rows: see the class docstring for the accepted index forms."""
        if isinstance(index, int):
            return self._storages[index]
        if isinstance(index, TensorDictBase):
            ids, rows = index.get("buffer_ids", None), index.get("index", None)
            if ids is None or rows is None:
                raise KeyError(f"StorageEnsemble.get expects 'buffer_ids' and 'index' entries, got {list(index.keys())}.")
            return [(int(sid), self._read(int(sid), row)) for sid, row in zip(ids.reshape(-1).tolist(), rows.unbind(0))]
        if not (isinstance(index, tuple) and len(index) == 2):
            raise IndexError("StorageEnsemble.get expects an int, a (storage_ids, indices) pair or a TensorDict.")
        ids, idx = torch.as_tensor(index[0]).reshape(-1), torch.as_tensor(index[1]).reshape(-1)
        return [self._read(sid, idx[ids == sid]) for sid in ids.unique(sorted=True).tolist()]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, (tuple, TensorDictBase)):
            return self.get(index)
        ids = _member_ids(index, len(self._storages), "StorageEnsemble")
        if isinstance(ids, int):
            return self._storages[ids]
        chosen = range(len(self._storages))[ids] if isinstance(ids, slice) else ids
        return StorageEnsemble(*(self._storages[i] for i in chosen), transforms=[self._transforms[i] for i in chosen])

    def __len__(self) -> int:
        return len(self._storages)

    def state_dict(self) -> dict[str, Any]:
        return {str(i): s.state_dict() for i, s in enumerate(self._storages)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for i, s in enumerate(self._storages):
            s.load_state_dict(state_dict[str(i)])

    def _empty(self) -> None:
        for s in self._storages:
            s._empty()

    def __repr__(self) -> str:
        return f"StorageEnsemble(storages={self._storages}, transforms={self._transforms})"
