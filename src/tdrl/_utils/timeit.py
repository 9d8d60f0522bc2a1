"""A process-wide timing registry: ``with timeit("collect"): ...`` or ``@timeit("update")``.

Each name accumulates the number of calls and the total time; ``timeit.todict()`` reads the figures
(mean seconds per call by default), ``timeit.print()`` logs them, ``timeit.erase()`` resets them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, ClassVar

from tdrl._utils.logging import logger

__all__ = ["timeit"]


class timeit:  # noqa: N801 - TorchRL's public name
    """Times a block or a function and records it under ``name``.

    Args:
        name: the key under which the time is accumulated.

    Examples:
        >>> with timeit("demo/block"):
        ...     _ = sum(range(10))
        >>> "demo/block" in timeit.todict()
        True
        >>> timeit.erase()
    """

    _REG: ClassVar[dict[str, list[float]]] = {}  # name -> [mean, total, count]

    def __init__(self, name: str) -> None:
        self.name = name
        self._t0 = 0.0

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with timeit(self.name):
                return fn(*args, **kwargs)

        return wrapped

    def __enter__(self) -> timeit:
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = time.perf_counter() - self._t0
        rec = self._REG.get(self.name)
        if rec is None:
            self._REG[self.name] = [elapsed, elapsed, 1.0]
        else:
            rec[1] += elapsed
            rec[2] += 1
            rec[0] = rec[1] / rec[2]

    @classmethod
    def todict(cls, percall: bool = True, prefix: str | None = None) -> dict[str, float]:
        """Returns ``{name: seconds}``, per call (``percall=True``) or in total."""
        idx = 0 if percall else 1
        out = {}
        for name, rec in cls._REG.items():
            key = f"{prefix}/{name}" if prefix else name
            out[key] = rec[idx]
        return out

    @classmethod
    def print(cls, prefix: str | None = None) -> str:
        """Logs one line per timer (mean per call, total, share of the summed total) and returns the text."""
        total = sum(rec[1] for rec in cls._REG.values()) or 1.0
        lines = []
        for name, (mean, tot, count) in sorted(cls._REG.items(), key=lambda kv: -kv[1][1]):
            key = f"{prefix}/{name}" if prefix else name
            lines.append(
                f"{key}: {mean * 1000:.4f} ms/call, total {tot:.4f} s, {int(count)} calls, {100 * tot / total:.1f}%"
            )
        text = "\n".join(lines)
        if text:
            logger.info("timeit\n%s", text)
        return text

    @classmethod
    def erase(cls) -> None:
        """Forgets every recorded time."""
        cls._REG.clear()
