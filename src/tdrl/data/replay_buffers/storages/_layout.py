"""Per-leaf flat views over an allocated tensor storage, for one gather / scatter per leaf."""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data.replay_buffers.utils import KeyPath, build_tensordict, leaf_paths

__all__ = ["LeafLayout", "data_leaves"]


def _plain(t: torch.Tensor) -> torch.Tensor:
    # MemoryMappedTensor (a Tensor subclass) pays __torch_function__ dispatch on every op.
    return t if type(t) is torch.Tensor else t.as_subclass(torch.Tensor)


def data_leaves(data: Any, paths: list[KeyPath] | None) -> tuple[list[KeyPath] | None, list[torch.Tensor]]:
    """Key paths and leaves of ``data`` (a tensor or TensorDict) in sorted path order."""
    if isinstance(data, torch.Tensor):
        return None, [data]
    own = leaf_paths(data) if type(data) is TensorDict else None
    if own is None:
        own = sorted((k,) if isinstance(k, str) else tuple(k) for k in data.keys(True, True))
        return own, [data.get(p) for p in own]
    leaves = []
    for p in own:
        node: Any = data
        for key in p:
            node = node._tensordict[key]
        leaves.append(node)
    return own, leaves


class LeafLayout:
    """Flat ``[rows, -1]`` and ``[cells, -1]`` views of every leaf of a storage.

    ``rows`` index the first storage dimension; ``cells`` index all ``ndim`` storage dimensions at
    once (they are the same for ``ndim == 1``).
    """

    def __init__(self, storage: torch.Tensor | TensorDictBase, ndim: int) -> None:
        self.is_tensor = isinstance(storage, torch.Tensor)
        paths, leaves = data_leaves(storage, None)
        self.paths = paths
        self.batch_size = storage.shape if isinstance(storage, torch.Tensor) else storage.batch_size
        self.ndim = ndim
        shape = self.batch_size[:ndim] if not self.is_tensor else storage.shape[:ndim]
        self.storage_shape = torch.Size(shape)
        self.rows_n = shape[0]
        self.cells_n = math.prod(shape)
        self.strides = [math.prod(shape[i + 1 :]) for i in range(ndim)]
        self.leaves = leaves
        self.item_shapes = [leaf.shape[ndim:] for leaf in leaves]
        self.row_shapes = [leaf.shape[1:] for leaf in leaves]
        self.dtypes = [leaf.dtype for leaf in leaves]
        self.device = leaves[0].device
        self.fast = all(leaf.is_contiguous() for leaf in leaves) and (
            self.is_tensor or type(storage) is TensorDict
        )
        if self.fast:
            plain = [_plain(leaf) for leaf in leaves]
            self.rows = [p.view(self.rows_n, -1) for p in plain]
            self.cells = [p.view(self.cells_n, -1) for p in plain]
        # Non-storage batch dims of a TensorDict storage (items that are themselves batched).
        self.inner_batch = torch.Size(self.batch_size[ndim:]) if not self.is_tensor else None

    def gather_rows(self, idx: torch.Tensor) -> torch.Tensor | TensorDict:
        n = idx.shape[0]
        out = [r.index_select(0, idx).view(n, *s) for r, s in zip(self.rows, self.row_shapes)]
        if self.is_tensor:
            return out[0]
        return build_tensordict(self.paths or [], out, torch.Size([n, *self.batch_size[1:]]))

    def gather_cells(self, flat: torch.Tensor) -> torch.Tensor | TensorDict:
        n = flat.shape[0]
        out = [c.index_select(0, flat).view(n, *s) for c, s in zip(self.cells, self.item_shapes)]
        if self.is_tensor:
            return out[0]
        return build_tensordict(self.paths or [], out, torch.Size([n, *(self.inner_batch or ())]))

    def flat_index(self, index: tuple[torch.Tensor, ...]) -> torch.Tensor:
        flat = index[-1]
        for i, stride in zip(index[:-1], self.strides[:-1]):
            flat = flat + i * stride
        return flat

    def write_rows(self, cursor: Any, leaves: list[torch.Tensor], n: int | None) -> None:
        """Writes data leaves at rows ``cursor`` (an int, a slice or a 1-D long tensor)."""
        for row, src in zip(self.rows, leaves):
            if src.device != row.device:
                src = src.to(row.device)
            if n is None:  # single row
                row[cursor].copy_(src.reshape(-1))
            elif isinstance(cursor, slice):
                row[cursor].copy_(src.reshape(n, -1))
            else:
                row.index_copy_(0, cursor, src.reshape(n, -1))
