"""A process-wide timing registry: ``with timeit("collect"): ...`` or ``@timeit("update")``.

Each name accumulates the number of calls and the total time; ``timeit.todict()`` reads the figures
(mean seconds per call by default), ``timeit.print()`` logs them, ``timeit.erase()`` resets them.

A timer is inclusive (TorchRL's semantics) unless built with ``exclusive=True``: an exclusive timer does not
count the time of the exclusive timers opened inside it, so phases that nest (evaluation run by a logging
hook, logging inside the optimisation loop) each get their own time and their totals add up to the whole.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from tdrl._utils.logging import logger

__all__ = ["timeit"]


class timeit:  # noqa: N801 - TorchRL's public name
    """Times a block or a function and records it under ``name``.

    Args:
        name: the key under which the time is accumulated.
        sync: synchronise CUDA before each timestamp, so that queued GPU work is counted (no-op on CPU).
        exclusive: tdrl extension: leave out the time of exclusive timers nested inside this one.

    Examples:
        >>> with timeit("demo/block"):
        ...     _ = sum(range(10))
        >>> "demo/block" in timeit.todict()
        True
        >>> import time
        >>> with timeit("demo/outer", exclusive=True):
        ...     with timeit("demo/inner", exclusive=True):
        ...         time.sleep(0.01)
        >>> timeit.total("demo/outer") < 0.01 <= timeit.total("demo/inner")
        True
        >>> timeit.erase()
    """

    _REG: ClassVar[dict[str, list[float]]] = {}  # name -> [mean, total, count]
    _OPEN: ClassVar[list[timeit]] = []  # the exclusive timers running now, innermost last
    _MARKS: ClassVar[dict[str, float]] = {}  # mark_start() times waiting for their mark_end()
    _printevery_count: ClassVar[int] = 0

    def __init__(self, name: str, *, sync: bool = False, exclusive: bool = False) -> None:
        self.name = name
        self.sync = sync
        self.exclusive = exclusive
        self._t0 = 0.0
        self._nested = 0.0

    def _now(self) -> float:
        if self.sync and torch.cuda.is_available():
            torch.cuda.synchronize()
        return time.perf_counter()

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with timeit(self.name, exclusive=self.exclusive):
                return fn(*args, **kwargs)

        return wrapped

    def __enter__(self) -> timeit:
        self._nested = 0.0
        if self.exclusive:
            self._OPEN.append(self)
        self._t0 = self._now()
        return self

    def start(self) -> timeit:
        """Starts the clock without a ``with`` block (read it with :meth:`elapsed`); returns ``self``."""
        self._t0 = self._now()
        return self

    def elapsed(self) -> float:
        """Seconds since the timer was entered or started (nothing is recorded)."""
        return self._now() - self._t0

    def __exit__(self, *exc: object) -> None:
        elapsed = self._now() - self._t0
        if self.exclusive:
            if self._OPEN and self._OPEN[-1] is self:
                self._OPEN.pop()
            if self._OPEN:
                self._OPEN[-1]._nested += elapsed
            elapsed -= self._nested
        self.record(self.name, elapsed)

    @classmethod
    def record(cls, name: str, seconds: float, calls: int = 1) -> None:
        """Adds ``seconds`` over ``calls`` calls to ``name`` (also used to restore saved figures)."""
        rec = cls._REG.setdefault(name, [0.0, 0.0, 0.0])
        rec[1] += seconds
        rec[2] += calls
        rec[0] = rec[1] / rec[2] if rec[2] else 0.0

    @classmethod
    def mark_start(cls, name: str) -> None:
        """Opens a timed event ``name`` that :meth:`mark_end` closes (for spans that cross functions)."""
        cls._MARKS[name] = time.perf_counter()

    @classmethod
    def mark_end(cls, name: str) -> None:
        """Records the time since :meth:`mark_start` under ``name``."""
        if name not in cls._MARKS:
            raise KeyError(f"timeit.mark_end({name!r}) without a matching mark_start; open marks: {sorted(cls._MARKS)}")
        cls.record(name, time.perf_counter() - cls._MARKS.pop(name))

    @classmethod
    def total(cls, name: str) -> float:
        """Total seconds recorded under ``name`` (0 when never timed)."""
        rec = cls._REG.get(name)
        return rec[1] if rec is not None else 0.0

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
    def state_dict(cls, prefix: str = "") -> dict[str, list[float]]:
        """``{name: [total seconds, calls]}`` of the timers whose name starts with ``prefix``."""
        return {name: [rec[1], rec[2]] for name, rec in cls._REG.items() if name.startswith(prefix)}

    @classmethod
    def load_state_dict(cls, state: dict[str, list[float]]) -> None:
        """Replaces the figures of the timers in ``state`` (see :meth:`state_dict`); others are kept."""
        for name, (total, calls) in state.items():
            cls._REG.pop(name, None)
            cls.record(name, float(total), int(calls))

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
    def printevery(cls, num_prints: int, total_count: int, *, prefix: str | None = None, erase: bool = False) -> None:
        """Call once per iteration: prints the timers ``num_prints`` times over ``total_count`` calls.

        The first call prints, then every ``max(1, total_count // num_prints)``-th one; with ``erase=True``
        the figures are reset after each print, so each print covers the interval since the previous one.

        Examples:
            >>> for _ in range(4):
            ...     with timeit("demo/loop"):
            ...         pass
            ...     timeit.printevery(2, 4, erase=True)
            >>> timeit.reset()
        """
        if num_prints <= 0:
            raise ValueError(f"timeit.printevery: num_prints must be positive, got {num_prints}")
        interval = max(1, total_count // num_prints)
        if cls._printevery_count % interval == 0:
            cls.print(prefix=prefix)
            if erase:
                cls.erase()
        cls._printevery_count += 1

    @classmethod
    def erase(cls) -> None:
        """Forgets every recorded time."""
        cls._REG.clear()

    @classmethod
    def reset(cls) -> None:
        """Same as :meth:`erase` (TorchRL has both names)."""
        cls.erase()
