"""The transform chain of a replay buffer.

Buffer transforms are plain callables, or objects with a forward ``__call__`` and an ``inv``
(e.g. ``tdrl.envs.transforms`` transforms). Forward calls run in order on sampled data; ``inv``
calls run in reverse order on written data. Transforms are duck-typed: this layer does not import
the (higher-layer) environment transforms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["BufferTransforms"]


class _Inverted:
    """Runs a transform's ``inv`` on sampled data and its forward call on written data."""

    def __init__(self, transform: Any) -> None:
        self.transform = transform

    def __call__(self, data: Any) -> Any:
        return self.transform.inv(data)

    def inv(self, data: Any) -> Any:
        return self.transform(data)


class BufferTransforms:
    """An ordered chain of buffer transforms.

    Args:
        transforms: the initial chain.

    Examples:
        >>> class AddOne:
        ...     def __call__(self, x): return x + 1
        ...     def inv(self, x): return x - 1
        >>> chain = BufferTransforms([AddOne(), lambda x: x * 10])
        >>> chain(1), chain.inv(5)
        (20, 4)
    """

    def __init__(self, transforms: list[Callable] | None = None) -> None:
        self._transforms: list[Any] = list(transforms or [])

    def __bool__(self) -> bool:
        return bool(self._transforms)

    def __len__(self) -> int:
        return len(self._transforms)

    def __getitem__(self, index: int) -> Any:
        return self._transforms[index]

    def _check(self, transform: Any, invert: bool) -> Any:
        if not callable(transform):
            raise TypeError(f"A buffer transform must be callable, got {type(transform).__name__}.")
        if invert:
            if not hasattr(transform, "inv"):
                raise TypeError(f"invert=True needs a transform with an inv method; {transform!r} has none.")
            return _Inverted(transform)
        return transform

    def append(self, transform: Callable, *, invert: bool = False) -> None:
        """Appends ``transform`` (wrapped to swap forward/inverse if ``invert``)."""
        self._transforms.append(self._check(transform, invert))

    def insert(self, index: int, transform: Callable, *, invert: bool = False) -> None:
        """Inserts ``transform`` at ``index``."""
        self._transforms.insert(index, self._check(transform, invert))

    def __call__(self, data: Any) -> Any:
        for t in self._transforms:
            data = t(data)
        return data

    def inv(self, data: Any) -> Any:
        """Applies the ``inv`` of each transform that has one, last transform first. A transform whose ``inv``
        returns ``None`` holds the data back (e.g. ``MCAdvantage`` until a group is complete): the chain
        stops and returns ``None``."""
        for t in reversed(self._transforms):
            inv = getattr(t, "inv", None)
            if inv is not None:
                data = inv(data)
                if data is None:
                    return None
        return data

    def state_dict(self) -> dict[str, Any]:
        """States of the transforms that have one (``nn.Module`` transforms), by position."""
        return {str(i): t.state_dict() for i, t in enumerate(self._transforms) if hasattr(t, "state_dict")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`."""
        for key, value in state_dict.items():
            self._transforms[int(key)].load_state_dict(value)

    def __repr__(self) -> str:
        return f"BufferTransforms({self._transforms!r})"
