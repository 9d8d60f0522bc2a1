"""Storage-backed maps from tensordict entries to tensordicts: ``TensorMap`` and ``TensorDictMap``."""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import torch
from tensordict import NestedKey, TensorDictBase, is_tensor_collection
from tensordict.nn import TensorDictModuleBase

from tdrl.data.map.hash import RandomProjectionHash, SipHash
from tdrl.data.map.query import QueryModule
from tdrl.data.replay_buffers.storages import (
    LazyStackStorage,
    LazyTensorStorage,
    ListStorage,
    Storage,
    TensorStorage,
)
from tdrl.data.replay_buffers.utils import stack_items

__all__ = ["TensorDictMap", "TensorMap"]

K = TypeVar("K")
V = TypeVar("V")


class TensorMap(abc.ABC, Generic[K, V]):
    """The interface of a map whose keys and values are tensors or tensordicts.

    Subclasses implement ``clear``, ``__getitem__``, ``__setitem__``, ``__len__`` and ``contains`` (a boolean
    tensor, one value per queried key); ``key in map`` calls ``contains``.

    Examples:
        >>> issubclass(TensorDictMap, TensorMap)
        True
    """

    @abc.abstractmethod
    def clear(self) -> None:
        """Removes every entry."""

    @abc.abstractmethod
    def __getitem__(self, item: K) -> V: ...

    @abc.abstractmethod
    def __setitem__(self, key: K, value: V) -> None: ...

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def contains(self, item: K) -> torch.Tensor:
        """Whether each key of ``item`` is in the map."""

    def __contains__(self, item: K) -> Any:
        return self.contains(item)


def _default_collate(storage: Storage) -> Callable[[Any], Any]:
    if isinstance(storage, (TensorStorage, LazyStackStorage)):
        return _identity
    if isinstance(storage, ListStorage):
        return stack_items
    return _identity


def _identity(x: Any) -> Any:
    return x


class TensorDictMap(TensorDictModuleBase, TensorMap[TensorDictBase, TensorDictBase]):
    """A map from some entries of a tensordict (the key) to a tensordict (the value), backed by a storage.

    ``query_module`` turns each element of a key tensordict into a storage index (elements with equal
    ``in_keys`` entries share one index); ``map[keys] = values`` writes the values at those indices and
    ``map[keys]`` reads them back. Keys with a batch dim are written and read element-wise; 0-dim keys too.

    Keyword Args:
        query_module: the :class:`QueryModule` mapping keys to indices.
        storage: the storage of the values (a :class:`~tdrl.data.LazyTensorStorage`, a
            :class:`~tdrl.data.ListStorage`, ...).
        collate_fn: applied to what the storage returns. Defaults to identity for tensor and lazy-stack
            storages and to stacking for list storages.
        out_keys: the value entries that are stored (others are dropped). Defaults to all entries.
        write_fn: ``write_fn(new)`` for keys not in the map, ``write_fn(new, old)`` for keys already in it;
            what it returns is written. Defaults to writing the new values as they are.

    Examples:
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> m = TensorDictMap(query_module=QueryModule(in_keys=["key1", "key2"], index_key="index"),
        ...                   storage=LazyTensorStorage(1000))
        >>> keys = TensorDict(key1=torch.tensor([[-1.0], [1], [3]]), key2=torch.tensor([[0.0], [2], [4]]),
        ...                   batch_size=[3])
        >>> m[keys] = TensorDict(out=torch.tensor([[10.0], [20], [30]]), batch_size=[3])
        >>> m[keys[1:]]["out"]
        tensor([[20.],
                [30.]])
        >>> m.contains(keys).tolist(), len(m)
        ([True, True, True], 3)
    """

    def __init__(
        self,
        *,
        query_module: QueryModule,
        storage: Storage,
        collate_fn: Callable[[Any], Any] | None = None,
        out_keys: list[NestedKey] | None = None,
        write_fn: Callable[..., Any] | None = None,
    ) -> None:
        if isinstance(storage, dict) or not all(hasattr(storage, a) for a in ("set", "get", "__len__")):
            raise TypeError(
                f"TensorDictMap: storage must be a storage (e.g. LazyTensorStorage(1000)), got {type(storage).__name__}."
            )
        super().__init__()
        self.in_keys = query_module.in_keys
        if out_keys is not None:
            self.out_keys = out_keys
        self.query_module = query_module
        self.index_key = query_module.index_key
        self.storage = storage
        self.batch_added = False
        self.collate_fn = _default_collate(storage) if collate_fn is None else collate_fn
        self.write_fn = write_fn

    @property
    def max_size(self) -> int:
        """The capacity of the storage."""
        return self.storage.max_size

    @property
    def out_keys(self) -> list[NestedKey]:
        """The stored value entries (read from a tensor storage's content when not given)."""
        cached = self.__dict__.get("_out_keys_and_lazy")
        if cached is not None:
            return cached[0]
        content = getattr(self.storage, "_storage", None)
        if content is not None and isinstance(self.storage, TensorStorage) and is_tensor_collection(content):
            keys = list(content.keys(True, True))
            self.__dict__["_out_keys_and_lazy"] = (keys, True)
            return keys
        raise AttributeError(
            f"TensorDictMap: no out_keys given and none can be read from a {type(self.storage).__name__} "
            "(out_keys are read from a TensorStorage after its first write)."
        )

    @out_keys.setter  # type: ignore[override]
    def out_keys(self, value: list[NestedKey]) -> None:
        self.__dict__["_out_keys_and_lazy"] = (list(value), False)

    def _has_lazy_out_keys(self) -> bool:
        cached = self.__dict__.get("_out_keys_and_lazy")
        return cached is None or cached[1]

    @classmethod
    def from_tensordict_pair(
        cls,
        source: TensorDictBase,
        dest: TensorDictBase,
        in_keys: list[NestedKey],
        out_keys: list[NestedKey] | None = None,
        max_size: int = 1000,
        storage_constructor: Callable[..., Storage] | None = None,
        hash_module: Callable | list[Callable] | None = None,
        collate_fn: Callable[[Any], Any] | None = None,
        write_fn: Callable[..., Any] | None = None,
        consolidated: bool | None = None,
    ) -> TensorDictMap:
        """Builds a map whose keys look like ``source`` and values like ``dest``.

        Keys with more than 16 features are hashed with :class:`RandomProjectionHash`, others with
        :class:`SipHash`, unless ``hash_module`` is given. The storage defaults to a
        ``LazyTensorStorage(max_size)``; ``storage_constructor()`` is called otherwise (``max_size`` unused).

        Examples:
            >>> from tensordict import TensorDict
            >>> src = TensorDict(obs=torch.randn(4, 3), action=torch.arange(4), batch_size=[4])
            >>> m = TensorDictMap.from_tensordict_pair(src, TensorDict(r=torch.ones(4), batch_size=[4]),
            ...                                        in_keys=["obs", "action"])
            >>> m[src] = TensorDict(r=torch.arange(4.0), batch_size=[4])
            >>> m[src[2]]["r"]
            tensor(2.)
        """
        if hash_module is None:
            modules: list[Any] = []
            for key in in_keys:
                entry = source.get(key)
                n_feat = 0 if entry.ndim == source.ndim else entry.shape[-1]
                big = n_feat > RandomProjectionHash._N_COMPONENTS_DEFAULT
                modules.append(RandomProjectionHash() if big else SipHash())
            hash_module = modules
        query_module = QueryModule(in_keys, hash_module=hash_module)
        if storage_constructor is None:
            storage_constructor = functools.partial(LazyTensorStorage, max_size, consolidated=bool(consolidated))
        elif consolidated is not None:
            storage_constructor = functools.partial(storage_constructor, consolidated=consolidated)
        return cls(
            query_module=query_module,
            storage=storage_constructor(),
            collate_fn=collate_fn,
            out_keys=out_keys,
            write_fn=write_fn,
        )

    def clear(self) -> None:
        """Empties the storage and forgets the known keys (TorchRL's ``clear`` fails on a storage)."""
        self.storage.empty()
        reset = getattr(self.query_module.hash_to_int, "clear", None)
        if reset is not None:
            reset()

    def _to_index(self, item: TensorDictBase, extend: bool, clone: bool | None = None) -> torch.Tensor:
        return self.query_module(item, extend=extend, clone=clone).get(self.index_key)

    def _maybe_add_batch(self, item: TensorDictBase, value: Any) -> tuple[TensorDictBase, Any]:
        self.batch_added = item.ndim == 0
        if self.batch_added:
            item = item.unsqueeze(0)
            if value is not None:
                value = value.unsqueeze(0)
        return item, value

    def _maybe_remove_batch(self, item: Any) -> Any:
        return item.squeeze(0) if self.batch_added else item

    def _present(self, index: torch.Tensor) -> torch.Tensor:
        return (index >= 0) & (index < len(self.storage))

    def __getitem__(self, item: TensorDictBase) -> TensorDictBase:
        item, _ = self._maybe_add_batch(item.copy(), None)
        batch_added = self.batch_added
        index = self._to_index(item, extend=False, clone=False)
        missing = ~self._present(index)
        if missing.any():
            raise KeyError(
                f"TensorDictMap: {int(missing.sum())} of the {index.numel()} queried keys ({self.in_keys}) "
                "are not in the map."
            )
        out = self.collate_fn(self.storage.get(index.reshape(-1)))
        self.batch_added = batch_added
        return self._maybe_remove_batch(out)

    def __setitem__(self, item: TensorDictBase, value: TensorDictBase) -> None:
        if not self._has_lazy_out_keys():
            value = value.select(*self.out_keys, strict=False)
        item, value = self._maybe_add_batch(item, value)
        if item.ndim != 1 or value.batch_size[:1] != item.batch_size:
            raise ValueError(
                f"TensorDictMap: keys and values need the same single batch dim, got key batch size "
                f"{tuple(item.batch_size)} and value batch size {tuple(value.batch_size)}."
            )
        index = self._to_index(item, extend=True)
        if index.unique().numel() < index.numel():
            # Repeated keys in one batch: write one at a time, so that write_fn sees each previous write.
            for i in range(index.numel()):
                self[item[i : i + 1]] = value[i : i + 1]
            return
        present = self._present(index)
        old_rows = present.nonzero().squeeze(-1)
        new_rows = (~present).nonzero().squeeze(-1)
        if old_rows.numel():
            old_value = value[old_rows]
            if self.write_fn is not None:
                old_value = self.write_fn(old_value, self.collate_fn(self.storage.get(index[old_rows])))
            # Overwrites do not count as new items (TorchRL's storage length grows with them).
            self.storage.set(index[old_rows], old_value, set_cursor=False)
        if new_rows.numel():
            new_value = value[new_rows] if old_rows.numel() else value
            if self.write_fn is not None:
                new_value = self.write_fn(new_value)
            self.storage.set(index[new_rows], new_value)

    def __len__(self) -> int:
        return len(self.storage)

    def contains(self, item: TensorDictBase) -> torch.Tensor:
        """A boolean tensor: whether each element of ``item`` (by its ``in_keys`` entries) is in the map."""
        item, _ = self._maybe_add_batch(item, None)
        index = self._to_index(item, extend=False, clone=True)
        return self._maybe_remove_batch(self._present(index))
