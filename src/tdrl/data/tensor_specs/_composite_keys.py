"""Key handling for :class:`~tdrl.data.Composite`: key normalization, the keys view, the structure version.

Examples:
    >>> _norm_key(("a", ("b",)))
    ('a', 'b')
    >>> "a" in _CompositeKeysView(("a", ("b", "c")))
    True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeGuard

from tensordict import NestedKey, TensorDictBase, unravel_key

# Bumped by every structural mutation of any Composite (set/del/shape change). Caches compare against it,
# so a change deep inside a shared sub-Composite invalidates its parents' caches too. Mutations happen
# while building envs, not per step, so a global counter costs nothing on the hot path.
_STRUCTURE_VERSION = [0]
_NO_DEFAULT = object()


def _bump() -> None:
    _STRUCTURE_VERSION[0] += 1


def _norm_key(key: Any) -> str | tuple[str, ...]:
    try:
        key = unravel_key(key)
    except Exception as err:
        raise TypeError(f"Composite keys are strings or tuples of strings, got {key!r}.") from err
    return key


def _is_string_key(key: Any) -> TypeGuard[NestedKey]:
    return isinstance(key, str) or (
        isinstance(key, tuple) and len(key) > 0 and all(isinstance(k, (str, tuple)) for k in key)
    )


class _CompositeKeysView:
    """Keys of a :class:`Composite`; ``in`` accepts ``"a"``, ``("a",)`` and nested tuples alike."""

    __slots__ = ("_keys", "_set")

    def __init__(self, keys: tuple[NestedKey, ...]) -> None:
        self._keys = keys
        self._set: frozenset | None = None

    def __iter__(self) -> Iterator[NestedKey]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        if self._set is None:
            self._set = frozenset(self._keys)
        try:
            return _norm_key(key) in self._set
        except TypeError:
            return False

    def __repr__(self) -> str:
        return f"_CompositeKeysView({list(self._keys)})"


def _dict_get(val: Mapping, key: NestedKey) -> Any:
    for part in (key,) if isinstance(key, str) else key:
        if not isinstance(val, (Mapping, TensorDictBase)) or part not in val:
            return _NO_DEFAULT
        val = val[part]
    return val
