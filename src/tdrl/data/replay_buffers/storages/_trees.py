"""Tensorclasses and pytrees in tensor storages: held as the TensorDict of their tensors.

A tensor storage allocates and indexes tensors or TensorDicts. A ``@tensorclass`` instance is a
TensorDict under a class: the storage holds its TensorDict and gives reads back the class. A pytree
(nested dicts, lists and tuples whose leaves are tensors) is flattened: leaf ``i`` is stored under
the key ``str(i)`` and reads are rebuilt with the tree's structure. Both are fixed by the first write;
a later write of another class or structure is refused with the structure expected.
"""

from __future__ import annotations

import sys
from typing import Any, cast

import torch
from tensordict import TensorDict, TensorDictBase, is_tensorclass
from torch.utils import _pytree

__all__ = ["TreeCodec", "is_tree"]


def is_tree(data: Any) -> bool:
    """Whether ``data`` is a tensorclass instance or a dict / list / tuple a tensor storage flattens."""
    return is_tensorclass(data) or (
        isinstance(data, (dict, list, tuple)) and not isinstance(data, TensorDictBase)
    )


class TreeCodec:
    """Turns one kind of tensorclass or pytree into TensorDicts and back.

    Args:
        example: the first item or batch written; its class (tensorclass) or tree structure (pytree)
            is what the storage holds from then on.
        owner: the storage's name, for error messages.
    """

    def __init__(self, example: Any, owner: str) -> None:
        self.owner = owner
        if is_tensorclass(example):
            self.cls: type | None = type(example)
            self.spec: _pytree.TreeSpec | None = None
        else:
            self.cls = None
            self.spec = self._leaves(example)[1]

    def _leaves(self, data: Any) -> tuple[list[torch.Tensor], _pytree.TreeSpec]:
        leaves, spec = _pytree.tree_flatten(data)
        if not leaves:
            raise ValueError(f"{self.owner}: the pytree {data!r} has no tensor leaf to store.")
        for i, leaf in enumerate(leaves):
            if not isinstance(leaf, torch.Tensor):
                raise TypeError(
                    f"{self.owner}: pytree leaf {i} is a {type(leaf).__name__} ({leaf!r}); tensor storages "
                    "hold pytrees of tensors only (use a ListStorage for other objects)."
                )
        return leaves, spec

    def encode(self, data: Any, batch_dims: int) -> TensorDictBase:
        """The TensorDict stored for ``data`` (its first ``batch_dims`` dims index items)."""
        if isinstance(data, TensorDictBase):
            return data  # already encoded (a buffer encodes before its writer slices the batch)
        if self.cls is not None:
            if type(data) is not self.cls:
                raise TypeError(f"{self.owner} holds {self.cls.__name__} items; cannot write a {type(data).__name__}.")
            return cast(Any, data)._tensordict  # a tensorclass instance
        if is_tensorclass(data) or not is_tree(data):
            raise TypeError(f"{self.owner} holds pytrees structured as {self.spec}; cannot write a {type(data).__name__}.")
        leaves, spec = self._leaves(data)
        if spec != self.spec:
            raise ValueError(f"{self.owner}: the pytree is structured as {spec}; the storage holds {self.spec}.")
        lead = leaves[0].shape[:batch_dims]
        for i, leaf in enumerate(leaves):
            if leaf.shape[:batch_dims] != lead:
                raise ValueError(
                    f"{self.owner}: pytree leaf {i} has shape {tuple(leaf.shape)}; every leaf must start with the "
                    f"batch dims {tuple(lead)} of leaf 0."
                )
        return TensorDict({str(i): leaf for i, leaf in enumerate(leaves)}, batch_size=lead)

    def decode(self, td: Any) -> Any:
        """The tensorclass / pytree rebuilt from a TensorDict read from the storage."""
        if not isinstance(td, TensorDictBase):
            return td
        if self.cls is not None:
            return cast(Any, self.cls)._from_tensordict(td)  # a tensorclass type
        assert self.spec is not None
        return _pytree.tree_unflatten([td.get(str(i)) for i in range(self.spec.num_leaves)], self.spec)

    def state(self) -> dict[str, Any]:
        """A picklable description of the held structure (for storage checkpoints)."""
        if self.cls is not None:
            return {"cls": f"{self.cls.__module__}:{self.cls.__qualname__}"}
        assert self.spec is not None
        return {"spec": _pytree.treespec_dumps(self.spec)}

    @classmethod
    def from_state(cls, state: dict[str, Any], owner: str) -> TreeCodec:
        """Rebuilds a codec from :meth:`state`.

        The tensorclass is looked up by its qualified name in a module that is already imported: a
        checkpoint never makes Python import (run) a module.
        """
        codec = cls.__new__(cls)
        codec.owner = owner
        codec.cls, codec.spec = None, None
        if not isinstance(state, dict) or not ({"cls"} <= state.keys() or {"spec"} <= state.keys()):
            raise ValueError(f"{owner}: the stored tree structure {state!r} has neither 'cls' nor 'spec'.")
        if "cls" in state:
            module, _, qualname = str(state["cls"]).partition(":")
            obj: Any = sys.modules.get(module)
            for part in qualname.split("."):
                obj = getattr(obj, part, None)
            if obj is None or not is_tensorclass(obj):
                raise ValueError(
                    f"{owner}: the data were stored as tensorclass {state['cls']!r}; import the module "
                    f"{module!r} that defines it before loading."
                )
            codec.cls = obj
        else:
            codec.spec = _pytree.treespec_loads(state["spec"])
        return codec
