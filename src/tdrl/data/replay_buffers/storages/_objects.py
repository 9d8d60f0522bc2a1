"""Non-tensor leaves (strings, Python objects) of a tensor storage, one value per storage cell.

A :class:`~tdrl.data.replay_buffers.storages.TensorStorage` keeps its tensor leaves in preallocated
tensors; a non-tensor leaf (``NonTensorData`` / ``NonTensorStack``, e.g. the prompt text of an LLM
step) has no tensor to live in. Preallocating a TensorDict from the first item would broadcast that
item's string to every row, so that reads return the first string for every row and samples drop the
key (tdrl before this module). Here each such leaf is a Python list with one value per storage cell
(all ``ndim`` storage dims flattened), written and read with the same indices as the tensors.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict, TensorDictBase

from tdrl.data.replay_buffers.utils import KeyPath

__all__ = ["ObjectColumns", "non_tensor_paths", "split_non_tensor"]


def non_tensor_paths(data: Any) -> list[KeyPath]:
    """The sorted key paths of the non-tensor leaves of ``data`` (empty for a tensor)."""
    if not isinstance(data, TensorDictBase):
        return []
    return sorted((k,) if isinstance(k, str) else tuple(k) for k, _ in data.non_tensor_items(True))


def _tensors_only(td: TensorDict) -> bool:
    # The hot path (every extend): a walk over plain dicts, ~10x cheaper than non_tensor_items().
    stack = [td]
    while stack:
        node = stack.pop()
        for value in node._tensordict.values():
            if type(value) is TensorDict:
                stack.append(value)
            elif not isinstance(value, torch.Tensor):
                return False
    return True


def split_non_tensor(data: Any) -> tuple[Any, dict[KeyPath, Any]]:
    """``data`` without its non-tensor leaves, and those leaves by key path."""
    if type(data) is TensorDict and _tensors_only(data):
        return data, {}
    paths = non_tensor_paths(data)
    if not paths:
        return data, {}
    objects = {p: data.get(p) for p in paths}
    return data.exclude(*paths), objects


def _flatten(nested: Any, depth: int) -> list[Any]:
    if depth == 0:
        return [nested]
    out: list[Any] = []
    for item in nested:
        out.extend(_flatten(item, depth - 1))
    return out


def _stack(values: list[Any], shape: tuple[int, ...], inner: bool) -> NonTensorData | NonTensorStack:
    if not shape:
        value = values[0]
        return NonTensorStack.from_list(value) if inner else NonTensorData(value)
    step = len(values) // shape[0] if shape[0] else 0
    return NonTensorStack(*(_stack(values[i * step : (i + 1) * step], shape[1:], inner) for i in range(shape[0])))


class ObjectColumns:
    """One Python list per non-tensor key path, holding a value per storage cell.

    Args:
        paths: the non-tensor key paths.
        storage_shape: the storage dims (``[capacity]`` for ``ndim=1``, ``[rows, ...]`` above).
        inner_batch: batch dims of an item beyond the storage dims (values of those cells are nested
            lists of that shape).

    Examples:
        >>> cols = ObjectColumns([("text",)], torch.Size([4]), torch.Size([]))
        >>> cols.write(torch.tensor([1, 2]), {("text",): NonTensorStack.from_list(["a", "b"])})
        >>> cols.read(torch.tensor([2, 1, 0]))[("text",)].tolist()
        ['b', 'a', None]
    """

    def __init__(self, paths: list[KeyPath], storage_shape: torch.Size, inner_batch: torch.Size) -> None:
        self.paths = list(paths)
        self.storage_shape = torch.Size(storage_shape)
        self.inner_batch = torch.Size(inner_batch)
        cells = self.storage_shape.numel()
        self.columns: dict[KeyPath, list[Any]] = {p: [None] * cells for p in self.paths}

    def cell_ids(self, index: Any, rows: int | None = None) -> torch.Tensor:
        """The flat cell ids that ``index`` selects from the first ``rows`` rows (all rows by default)."""
        if len(self.storage_shape) == 1 and isinstance(index, torch.Tensor) and index.ndim == 1 and (
            not index.is_floating_point() and index.dtype is not torch.bool
        ):
            # The sampling path: rows are cells, so the (already checked) row index is the cell id. The
            # general path below allocates an id per cell of the storage on every call.
            index = index.cpu().long()
            return index + (rows if rows is not None else self.storage_shape[0]) * (index < 0)
        ids = torch.arange(self.storage_shape.numel()).view(self.storage_shape)
        if rows is not None:
            ids = ids[:rows]
        if isinstance(index, torch.Tensor) and index.device.type != "cpu":
            index = index.cpu()
        elif isinstance(index, tuple):
            index = tuple(i.cpu() if isinstance(i, torch.Tensor) else i for i in index)
        return ids[index]

    def check_keys(self, objects: dict[KeyPath, Any], owner: str) -> None:
        """Raises a ``KeyError`` naming the keys when ``objects`` does not hold exactly this storage's keys."""
        if set(objects) != set(self.paths):
            have, want = set(objects), set(self.paths)
            raise KeyError(
                f"{owner}: the non-tensor keys of the data do not match the storage's: "
                f"missing {sorted(want - have)}, unexpected {sorted(have - want)}."
            )

    def write(self, cell_ids: torch.Tensor, objects: dict[KeyPath, Any]) -> None:
        """Writes each leaf of ``objects`` (batch ``cell_ids.shape + inner_batch``) at ``cell_ids``."""
        self.check_write(cell_ids, objects)
        flat = cell_ids.reshape(-1).tolist()
        for path, leaf in objects.items():
            values = _flatten(leaf.tolist(), cell_ids.ndim)
            column = self.columns[path]
            for cell, value in zip(flat, values):
                column[cell] = value

    def check_write(self, cell_ids: torch.Tensor, objects: dict[KeyPath, Any]) -> None:
        """Raises a ``ValueError`` naming the key when a leaf's batch does not cover ``cell_ids``."""
        want = (*cell_ids.shape, *self.inner_batch)
        for path, leaf in objects.items():
            if tuple(leaf.batch_size) != want:
                raise ValueError(
                    f"non-tensor key {path if len(path) > 1 else path[0]!r} has batch {tuple(leaf.batch_size)}; "
                    f"expected {want} for the {cell_ids.numel()} cells written."
                )

    def read(self, cell_ids: torch.Tensor) -> dict[KeyPath, NonTensorData | NonTensorStack]:
        """The leaves at ``cell_ids``, each with batch ``cell_ids.shape + inner_batch``."""
        flat = cell_ids.reshape(-1).tolist()
        shape = tuple(cell_ids.shape)
        inner = bool(self.inner_batch)
        return {path: _stack([self.columns[path][c] for c in flat], shape, inner) for path in self.paths}

    def attach(self, out: Any, cell_ids: torch.Tensor) -> Any:
        """Sets the leaves at ``cell_ids`` into ``out`` (a TensorDict read at the same index)."""
        for path, value in self.read(cell_ids).items():
            out.set(path, value)
        return out

    def state(self, cells: int) -> dict[str, list[Any]]:
        """The first ``cells`` values of each column, keyed by the ``/``-joined path (JSON-friendly)."""
        return {"/".join(path): self.columns[path][:cells] for path in self.paths}

    def load_state(self, state: dict[str, list[Any]]) -> None:
        """Restores columns written by :meth:`state` (a shorter column leaves the rest empty)."""
        for key, values in state.items():
            path = tuple(key.split("/"))
            if path not in self.columns:
                raise KeyError(f"checkpoint holds the non-tensor key {key!r}; this storage has {self.paths}")
            self.columns[path][: len(values)] = list(values)
