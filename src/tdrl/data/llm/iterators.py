"""``create_infinite_iterator``: cycle over a finite iterable (a dataloader) for as long as training runs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["create_infinite_iterator"]

T = TypeVar("T")


def create_infinite_iterator(iterator: Iterable[T]) -> Iterator[T]:
    """Yields the items of ``iterator`` again and again (a new pass over it each time it ends).

    ``iterator`` must be re-iterable (a list, a ``DataLoader``); a one-shot iterator that yields nothing on
    its second pass raises ``ValueError`` instead of looping forever.

    Args:
        iterator: the iterable to cycle over.

    Examples:
        >>> from itertools import islice
        >>> list(islice(create_infinite_iterator([1, 2]), 5))
        [1, 2, 1, 2, 1]
    """
    while True:
        empty = True
        for item in iterator:
            empty = False
            yield item
        if empty:
            raise ValueError(
                "create_infinite_iterator: the iterable yielded nothing (empty, or a spent iterator)"
            )
