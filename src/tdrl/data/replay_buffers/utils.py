"""Low-level helpers shared by storages, writers and buffers.

The TensorDict helpers here build outputs leaf by leaf from precomputed key paths: they avoid the
per-call metadata work of generic ``torch.stack(list_of_tds)`` / ``td.unbind(0)`` on the hot paths of
list storages, and fall back to those generic calls for anything that is not a plain
:class:`~tensordict.TensorDict` of tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase, is_tensor_collection

__all__ = [
    "applied",
    "build_tensordict",
    "fast_stack",
    "fast_unbind",
    "find_start_stop_traj",
    "is_int",
    "leaf_paths",
    "stack_items",
]

KeyPath = tuple[str, ...]


def applied(td: TensorDictBase, fn: Callable[[torch.Tensor], torch.Tensor], **kwargs: Any) -> TensorDictBase:
    """``td.apply(fn, **kwargs)``, typed: tensordict types ``apply`` as possibly ``None`` (for in-place use).

    Examples:
        >>> applied(TensorDict(a=torch.ones(2), batch_size=[2]), lambda x: x * 2)["a"]
        tensor([2., 2.])
    """
    out = td.apply(fn, **kwargs)
    if out is None:
        raise RuntimeError(f"{type(td).__name__}.apply returned None: expected a new TensorDict.")
    return out


def is_int(obj: Any) -> bool:
    """Whether ``obj`` is a Python/NumPy integer or a 0-d integer tensor.

    Examples:
        >>> is_int(3), is_int(torch.tensor(2)), is_int(torch.tensor([2])), is_int(2.0)
        (True, True, False, False)
    """
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        return True
    return isinstance(obj, torch.Tensor) and obj.ndim == 0 and not obj.is_floating_point()


def leaf_paths(td: TensorDictBase) -> list[KeyPath] | None:
    """Key paths of the tensor leaves of a plain (nested) TensorDict, or ``None`` if it has others.

    Examples:
        >>> leaf_paths(TensorDict({"a": torch.zeros(2), ("b", "c"): torch.zeros(2)}, [2]))
        [('a',), ('b', 'c')]
    """
    paths: list[KeyPath] = []
    stack: list[tuple[KeyPath, TensorDictBase]] = [((), td)]
    while stack:
        prefix, node = stack.pop()
        if type(node) is not TensorDict:
            return None
        for key, value in node._tensordict.items():
            if isinstance(value, torch.Tensor):
                paths.append((*prefix, key))
            else:
                stack.append(((*prefix, key), value))
    paths.sort()
    return paths


def _get_path(td: TensorDict, path: KeyPath) -> torch.Tensor:
    node: Any = td
    for key in path:
        node = node._tensordict[key]
    return node


def build_tensordict(
    paths: Sequence[KeyPath], leaves: Sequence[torch.Tensor], batch_size: torch.Size
) -> TensorDict:
    """Builds a nested :class:`TensorDict` from leaf key paths and tensors without re-validation.

    Args:
        paths: key paths, as returned by :func:`leaf_paths`.
        leaves: one tensor per path, each with leading dims ``batch_size``.
        batch_size: the batch size of the result (and of every nested TensorDict).

    Examples:
        >>> build_tensordict([("a",), ("b", "c")], [torch.zeros(2, 1), torch.ones(2)], torch.Size([2]))["b", "c"]
        tensor([1., 1.])
    """
    root: dict[str, Any] = {}
    for path, leaf in zip(paths, leaves):
        node = root
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = leaf
    return _from_nested(root, batch_size)


def _from_nested(tree: dict[str, Any], batch_size: torch.Size) -> TensorDict:
    source: dict[Any, Any] = {
        k: (_from_nested(v, batch_size) if isinstance(v, dict) else v) for k, v in tree.items()
    }
    return TensorDict._new_unsafe(source, batch_size=batch_size)


def fast_stack(items: Sequence[Any]) -> TensorDict | None:
    """Stacks same-structure plain TensorDicts leaf by leaf; ``None`` if they do not qualify.

    Examples:
        >>> tds = [TensorDict({"a": torch.full((3,), float(i))}, []) for i in range(2)]
        >>> fast_stack(tds)["a"][:, 0]
        tensor([0., 1.])
    """
    first = items[0]
    if any(type(x) is not TensorDict for x in items):
        return None
    paths = leaf_paths(first)
    if not paths:
        return None
    batch = first.batch_size
    if any(x.batch_size != batch for x in items):
        return None
    try:
        leaves = [torch.stack([_get_path(x, p) for x in items]) for p in paths]
    except (KeyError, RuntimeError, AttributeError):
        return None
    return build_tensordict(paths, leaves, torch.Size([len(items), *batch]))


def fast_unbind(td: TensorDictBase) -> list[TensorDictBase] | tuple[TensorDictBase, ...]:
    """``td.unbind(0)``, built leaf by leaf for plain TensorDicts (much less per-item overhead).

    Examples:
        >>> parts = fast_unbind(TensorDict({"a": torch.arange(3)}, [3]))
        >>> len(parts), parts[2]["a"]
        (3, tensor(2))
    """
    paths = leaf_paths(td) if type(td) is TensorDict else None
    if not paths:
        return td.unbind(0)
    columns = [_get_path(td, p).unbind(0) for p in paths]
    inner = td.batch_size[1:]
    return [build_tensordict(paths, row, inner) for row in zip(*columns)]


def stack_items(items: Sequence[Any]) -> Any:
    """Default collate for list storages: stacks tensors and TensorDicts, else returns the list.

    Examples:
        >>> stack_items([torch.zeros(2), torch.ones(2)]).shape
        torch.Size([2, 2])
        >>> stack_items([1, 2])
        tensor([1, 2])
        >>> stack_items(["a", "b"])
        ['a', 'b']
    """
    if not len(items):
        return items
    first = items[0]
    if isinstance(first, torch.Tensor):
        return torch.stack(list(items))
    if is_tensor_collection(first):
        out = fast_stack(items)
        if out is None:
            out = LazyStackedTensorDict.maybe_dense_stack(list(items))
        return out
    if isinstance(first, (bool, int, float)) and all(type(x) is type(first) for x in items):
        # Plain numbers (``rb.extend(range(n))``) collate to a tensor; TorchRL's torch.stack raises here.
        return torch.tensor(list(items))
    return list(items)


def _cursor_row(cursor: int | torch.Tensor | range) -> int:
    """The last written row named by a storage cursor (an int, a tensor of rows or a range)."""
    if isinstance(cursor, torch.Tensor):
        if not cursor.numel():
            raise RuntimeError("find_start_stop_traj: cursor must not be an empty tensor.")
        return int(cursor.reshape(-1)[-1])
    if isinstance(cursor, range):
        if not len(cursor):
            raise RuntimeError("find_start_stop_traj: cursor must not be an empty range.")
        return cursor[-1]
    if not is_int(cursor):
        raise RuntimeError(f"find_start_stop_traj: cursor must be an int, a 1-D tensor or a range, got {cursor!r}.")
    return int(cursor)


def _end_flags(
    trajectory: torch.Tensor | None, end: torch.Tensor | None, at_capacity: bool, cursor: Any
) -> torch.Tensor:
    """A ``[T, *B]`` boolean tensor where every trajectory's last step is set."""
    if (trajectory is None) == (end is None):
        raise TypeError("find_start_stop_traj: pass exactly one of trajectory= and end=.")
    signal = trajectory if trajectory is not None else end
    assert signal is not None
    if signal.ndim == 0 or signal.shape[0] == 0:
        raise RuntimeError(
            f"find_start_stop_traj: the signal needs a non-empty time dim 0, got shape {tuple(signal.shape)}."
        )
    if trajectory is not None:
        # A step ends its trajectory where the id changes; the last row compares with row 0 in a ring.
        last = trajectory[-1:] != trajectory[:1] if at_capacity else torch.ones_like(trajectory[:1], dtype=torch.bool)
        flags = torch.cat([trajectory[:-1] != trajectory[1:], last], 0)
    else:
        flags = end.bool().clone()  # type: ignore[union-attr]  # exactly one of the two is set (checked above)
        if not at_capacity:
            flags[-1] = True
    if at_capacity:
        if cursor is not None:
            flags[_cursor_row(cursor)] = True  # what followed the cursor was overwritten
        # A column with no end at all is one trajectory wrapping around: it ends on the last row.
        flags[-1] |= ~flags.any(0)
    return flags


def find_start_stop_traj(
    *,
    trajectory: torch.Tensor | None = None,
    end: torch.Tensor | None = None,
    at_capacity: bool,
    cursor: int | torch.Tensor | range | None = None,
    device: torch.device | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Trajectory boundaries of a storage-order ``[T, *B]`` signal (time along dim 0).

    A step ends a trajectory where its ``end`` flag is set, or where the ``trajectory`` id changes
    at the next step. Not ``at_capacity``: the last row ends every column. ``at_capacity`` (a full
    ring buffer): the row under ``cursor`` (the last written one) is an end, a trajectory without an
    end before the last row continues at row 0 (then ``start > stop``), and a column with no end at
    all ends on its last row.

    Keyword Args:
        trajectory: per-step trajectory ids (exclusive with ``end``).
        end: per-step end-of-trajectory flags (exclusive with ``trajectory``).
        at_capacity: whether the storage is full and wraps around.
        cursor: the last written row (``at_capacity`` only).
        device: where to run the computation; results come back on the input's device.

    Returns:
        ``(start, stop, lengths)``: ``[N, 1 + len(B)]`` inclusive first/last coordinates (time in
        column 0) of the ``N`` trajectories, ordered by batch coordinates then time, and their
        ``[N]`` lengths.

    Examples:
        >>> end = torch.zeros(10, dtype=torch.bool)
        >>> end[2] = end[7] = True
        >>> start, stop, lengths = find_start_stop_traj(end=end, at_capacity=True, cursor=4)
        >>> start[:, 0].tolist(), stop[:, 0].tolist(), lengths.tolist()
        ([8, 3, 5], [2, 4, 7], [5, 2, 3])
    """
    signal = trajectory if trajectory is not None else end
    home = signal.device if signal is not None else None
    if device is not None:
        trajectory = None if trajectory is None else trajectory.to(device)
        end = None if end is None else end.to(device)
    flags = _end_flags(trajectory, end, at_capacity, cursor)
    length = flags.shape[0]
    # Moving time last makes nonzero() list the ends of one column together, in time order.
    stop = flags.permute(*range(flags.ndim - 1, 0, -1), 0).nonzero()
    stop = torch.cat([stop[:, -1:], stop[:, :-1].flip(-1)], -1)
    start = stop.clone()
    if stop.shape[0]:
        col = stop[:, 1:]
        same_col = (col[1:] == col[:-1]).all(-1)
        first = torch.cat([torch.ones(1, dtype=torch.bool, device=stop.device), ~same_col])
        last = torch.cat([~same_col, torch.ones(1, dtype=torch.bool, device=stop.device)])
        prev = torch.cat([stop[:1, 0], stop[:-1, 0]])
        prev[first] = stop[last, 0]  # a column's first trajectory starts after its last end (wrap)
        start[:, 0] = (prev + 1) % length
    lengths = stop[:, 0] - start[:, 0] + 1
    lengths = torch.where(lengths <= 0, lengths + length, lengths)
    if home is not None and device is not None:
        return start.to(home), stop.to(home), lengths.to(home)
    return start, stop, lengths


def members_rng(members_attr: str) -> property:
    """The ``_rng`` property of an ensemble: the buffer's generator, handed on to every member held in
    ``self.<members_attr>`` (samplers and writers draw from it).

    Examples:
        >>> class Pair:
        ...     _rng = members_rng("_members")
        ...     def __init__(self, *members):
        ...         self._members = list(members)
        >>> a, b = Pair(), Pair()
        >>> pair = Pair(a, b)
        >>> pair._rng = torch.Generator()
        >>> a._rng is pair._rng is b._rng
        True
    """

    def get(self: Any) -> torch.Generator | None:
        return self.__dict__.get("_rng_private")

    def set_(self: Any, value: torch.Generator | None) -> None:
        self.__dict__["_rng_private"] = value
        for member in self.__dict__.get(members_attr, ()):
            member._rng = value

    return property(get, set_)
