"""``Hash``: entries (typically strings) mapped to a fixed-size hash tensor, with an optional inverse table."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack
from tensordict.utils import NestedKey

from tdrl.envs.transforms.unary import UnaryTransform

__all__ = ["Hash"]


def _raw(value: Any) -> Any:
    if isinstance(value, (NonTensorData, NonTensorStack)):
        return value.tolist()
    return value


class Hash(UnaryTransform):
    """Hashes each ``in_keys`` entry into ``out_keys`` (default: SHA-256 bytes as a ``uint8`` tensor of 32).

    With ``in_keys_inv``, every value hashed is remembered in a repertoire so that ``inv`` maps a hash back
    to its value (e.g. an LLM env hashing prompts, a policy reading them back).

    Args:
        in_keys: entries hashed.
        out_keys: the hash entries.
        in_keys_inv: inputs written back from their hash by the inverse.
        out_keys_inv: hash inputs read by the inverse.

    Keyword Args:
        hash_fn: ``value -> tensor`` (or ``(value, seed) -> tensor`` when ``seed`` is given); default
            :meth:`reproducible_hash`. A batch of strings (a list) is hashed element-wise by the default.
        seed: prepended to each string before hashing.
        use_raw_nontensor: pass ``NonTensorData``/``NonTensorStack`` to ``hash_fn`` as they are.
        repertoire: an initial ``{hash key: value}`` table for the inverse.

    Examples:
        >>> from tensordict import TensorDict
        >>> t = Hash(in_keys=["text"], out_keys=["hash"], in_keys_inv=["text"], out_keys_inv=["hash"])
        >>> h = t(TensorDict(text="hello"))["hash"]
        >>> h.dtype, h.shape, h[:4].tolist()
        (torch.uint8, torch.Size([32]), [44, 242, 77, 186])
        >>> t.inv(TensorDict(hash=h))["text"]
        'hello'
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey],
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        hash_fn: Callable[..., torch.Tensor] | None = None,
        seed: Any | None = None,
        use_raw_nontensor: bool = False,
        repertoire: dict[Any, Any] | None = None,
    ) -> None:
        self._hash_fn = Hash.reproducible_hash if hash_fn is None else hash_fn
        self._seed = seed
        self._repertoire = {} if repertoire is None and in_keys_inv else repertoire
        super().__init__(
            in_keys=in_keys,
            out_keys=out_keys,
            in_keys_inv=in_keys_inv,
            out_keys_inv=out_keys_inv,
            fn=self.call_hash_fn,
            inv_fn=self.get_input_from_hash,
            use_raw_nontensor=use_raw_nontensor,
        )
        self.invertible = bool(self.in_keys_inv)

    @classmethod
    def reproducible_hash(cls, string: Any, seed: Any | None = None) -> torch.Tensor:
        """SHA-256 of ``seed + string`` (``""`` for None) as 32 ``uint8``; a list is hashed element-wise."""
        if isinstance(string, (list, tuple)):
            return torch.stack([cls.reproducible_hash(s, seed) for s in string])
        if string is None:
            string = ""
        text = seed + string if seed is not None else str(string)
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        return torch.frombuffer(bytearray(digest), dtype=torch.uint8)

    @classmethod
    def hash_to_repertoire_key(cls, hash_tensor: Any) -> Any:
        """A hashable key (nested tuples of ints) for a hash tensor."""
        if isinstance(hash_tensor, torch.Tensor):
            hash_tensor = hash_tensor.tolist()
        if isinstance(hash_tensor, list):
            return tuple(cls.hash_to_repertoire_key(h) for h in hash_tensor)
        return hash_tensor

    def call_hash_fn(self, value: Any) -> torch.Tensor:
        """Hashes ``value`` (recording it in the repertoire when the inverse is enabled)."""
        if not self.use_raw_nontensor:
            value = _raw(value)
        out = self._hash_fn(value) if self._seed is None else self._hash_fn(value, self._seed)
        if not isinstance(out, torch.Tensor):
            raise ValueError(f"Hash: hash_fn must return a tensor, got {type(out).__name__}")
        if self._repertoire is not None:
            self._repertoire[self.hash_to_repertoire_key(out)] = copy.copy(value)
        return out

    def get_input_from_hash(self, hash_tensor: Any) -> Any:
        """The value recorded for ``hash_tensor``."""
        if self._repertoire is None:
            raise RuntimeError(
                "Hash.inv: no repertoire (pass in_keys_inv or a repertoire to enable the inverse)"
            )
        key = self.hash_to_repertoire_key(hash_tensor)
        if key not in self._repertoire:
            raise KeyError(f"Hash.inv: hash {hash_tensor} was never produced by this transform")
        return self._repertoire[key]

    def state_dict(
        self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> Any:
        return {"_repertoire": self._repertoire}

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        self._repertoire = state_dict["_repertoire"]
