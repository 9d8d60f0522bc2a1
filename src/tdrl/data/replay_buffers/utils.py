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
