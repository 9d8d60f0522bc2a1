"""From tensordict entries to storage indices: ``HashToInt`` and ``QueryModule``."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping
from typing import Any, cast

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import nn

from tdrl.data.map.hash import SipHash

__all__ = ["HashToInt", "QueryModule"]


class HashToInt(nn.Module):
    """Maps hash values to contiguous indices ``0, 1, 2, ...`` in order of first appearance.

    With ``extend=True`` unseen hashes get the next free index; with ``extend=False`` they map to
    ``len(self)`` (one past the last known index), which a storage of ``len(self)`` items does not hold.

    Examples:
        >>> h2i = HashToInt()
        >>> h2i(torch.tensor([42, 7, 42]), extend=True)
        tensor([0, 1, 0])
        >>> h2i(torch.tensor([7, 99]))
        tensor([1, 2])
    """

    def __init__(self) -> None:
        super().__init__()
        self._index_to_index: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._index_to_index)

    def forward(self, key: torch.Tensor, extend: bool = False) -> torch.Tensor:
        table = self._index_to_index
        if extend:
            result = [table.setdefault(k, len(table)) for k in key.tolist()]
        else:
            result = [table.get(k, len(table)) for k in key.tolist()]
        return torch.tensor(result, device=key.device, dtype=key.dtype)

    def clear(self) -> None:
        """Forgets every hash."""
        self._index_to_index.clear()

    def state_dict(  # type: ignore[override]
        self, *args: Any, destination: dict[str, Any] | None = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Any]:
        # TorchRL builds these tensors from dict views, which torch.tensor rejects; lists work. Writing into
        # ``destination`` lets a parent module's state_dict hold the table too.
        out: dict[str, Any] = {} if destination is None else destination
        out[prefix + "keys"] = torch.tensor(list(self._index_to_index.keys()), dtype=torch.int64)
        out[prefix + "values"] = torch.tensor(list(self._index_to_index.values()), dtype=torch.int64)
        return out

    def _load_from_state_dict(
        self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool, missing_keys: list[str],
        unexpected_keys: list[str], error_msgs: list[str],
    ) -> None:
        names = [prefix + "keys", prefix + "values"]
        missing = [n for n in names if n not in state_dict]
        if missing:
            missing_keys.extend(missing)
            return
        self.load_state_dict({"keys": state_dict[names[0]], "values": state_dict[names[1]]})

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        missing = [k for k in ("keys", "values") if k not in state_dict]
        if missing:
            raise KeyError(f"HashToInt.load_state_dict: missing entries {missing} (expected 'keys' and 'values').")
        keys, values = state_dict["keys"], state_dict["values"]
        if keys.shape != values.shape:
            raise ValueError(f"HashToInt.load_state_dict: 'keys' {tuple(keys.shape)} and 'values' "
                             f"{tuple(values.shape)} differ in shape.")
        self._index_to_index = dict(zip(keys.tolist(), values.tolist()))
        return None


def _hash_modules(hash_module: Any, in_keys: list[Any]) -> list[Callable]:
    if hash_module is None:
        return [SipHash() for _ in in_keys]
    if isinstance(hash_module, list):
        if len(hash_module) != len(in_keys):
            raise ValueError(
                f"QueryModule: got {len(hash_module)} hash modules for {len(in_keys)} in_keys {in_keys}; "
                "pass one per key (or a single one)."
            )
        return hash_module
    if len(in_keys) == 1:
        return [hash_module]
    try:
        return [copy.deepcopy(hash_module) for _ in in_keys]
    except Exception as err:
        raise RuntimeError("QueryModule: could not deepcopy the hash module; pass a list of hash modules.") from err


class QueryModule(TensorDictModuleBase):
    """Writes, for each element of a tensordict, an integer index into a storage derived from some of its entries.

    Each ``in_key`` entry is hashed by its hash module (one hash per batch element); with several keys the
    per-key hashes are stacked on the last dim and hashed again by ``aggregator``. ``hash_to_int`` then turns
    the hash into a contiguous index. Elements with equal entries get equal indices.

    Args:
        in_keys: the entries that identify an element.
        index_key: where the index is written. Defaults to ``"_index"``.
        hash_key: where the hash is written. Defaults to ``"_hash"``.

    Keyword Args:
        hash_module: a hash module (copied for each key) or a list with one per key. Defaults to
            :class:`SipHash`.
        hash_to_int: maps hashes to indices. Defaults to a new :class:`HashToInt`.
        aggregator: hashes the stacked per-key hashes (several keys only). Defaults to ``hash_module`` when
            a single one was given, else :class:`SipHash`.
        clone: if ``True``, write into a shallow copy of the input instead of the input. Defaults to ``False``.

    Examples:
        >>> from tensordict import TensorDict
        >>> q = QueryModule(in_keys=["key1", "key2"], index_key="index")
        >>> td = TensorDict(key1=torch.tensor([[1.0], [1], [1], [2]]), key2=torch.tensor([[3.0], [3], [2], [3]]),
        ...                 batch_size=[4])
        >>> q(td)["index"]
        tensor([0, 0, 1, 2])
    """

    def __init__(
        self,
        in_keys: list[NestedKey] | NestedKey,
        index_key: NestedKey = "_index",
        hash_key: NestedKey = "_hash",
        *,
        hash_module: Callable[[Any], Any] | list[Callable[[Any], Any]] | None = None,
        hash_to_int: Callable[..., torch.Tensor] | None = None,
        aggregator: Callable[[Any], Any] | None = None,
        clone: bool = False,
    ) -> None:
        if not isinstance(in_keys, list):
            in_keys = [in_keys]
        if len(in_keys) == 0:
            raise ValueError("QueryModule: `in_keys` cannot be empty.")
        super().__init__()
        self.in_keys = cast(Any, in_keys)
        self.out_keys = cast(Any, [index_key, hash_key])
        self.index_key = self.out_keys[0]
        self.hash_key = self.out_keys[1]
        if aggregator is not None and len(in_keys) == 1:
            warnings.warn(
                "QueryModule: an aggregator was given but there is a single in_key; it is not used.", stacklevel=2
            )
        elif aggregator is None:
            aggregator = hash_module if hash_module is not None and not isinstance(hash_module, list) else SipHash()
        self.aggregator = aggregator
        self.hash_module = dict(zip(self.in_keys, _hash_modules(hash_module, self.in_keys)))
        self.hash_to_int = HashToInt() if hash_to_int is None else hash_to_int
        self.clone = clone

    def forward(
        self,
        tensordict: TensorDictBase,
        *,
        extend: bool = True,
        write_hash: bool = True,
        clone: bool | None = None,
    ) -> TensorDictBase:
        hashes = []
        for key in self.in_keys:
            entry = tensordict.get(key, None)
            if entry is None:
                raise KeyError(f"QueryModule: key {key!r} not found in the tensordict (keys: "
                               f"{list(tensordict.keys(True, True))}).")
            hashes.append(self.hash_module[key](entry))
        hash_values = self.aggregator(torch.stack(hashes, dim=-1)) if len(hashes) > 1 else hashes[0]
        index = self.hash_to_int(hash_values, extend=extend)
        output = tensordict.copy() if (self.clone if clone is None else clone) else tensordict
        output.set(self.index_key, index)
        if write_hash:
            output.set(self.hash_key, hash_values)
        return output
