"""``LoggerMonitor``: pull ``stats()`` snapshots from collectors / replay buffers and log them on a schedule."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

from tdrl._utils import logger as tdrl_logger
from tdrl.record.loggers.common import Logger

__all__ = ["Every", "LoggerMonitor"]

# Cumulative counters whose per-second rate is logged by default, and the name of that rate.
RATE_NAMES = {
    "frames": "frames_per_second",
    "batches": "batches_per_second",
    "write_count": "writes_per_second",
    "worker_frames": "worker_frames_per_second",
    "sample_calls": "samples_per_second",
    "samples_returned": "samples_returned_per_second",
}


@dataclasses.dataclass(frozen=True)
class Every:
    """When a :class:`LoggerMonitor` logs a target: every ``interval`` seconds, or each time the cumulative
    counter ``key`` of its ``stats()`` crosses a multiple of ``interval``.

    Build one with :meth:`seconds` or :meth:`counter`. A counter that jumps over several multiples between two
    polls logs once; a counter that decreases (a reset) starts a new baseline.

    Examples:
        >>> Every.counter("frames", 1000)
        Every(kind='counter', interval=1000, key='frames')
        >>> Every.seconds(30).interval
        30.0
    """

    kind: Literal["seconds", "counter"]
    interval: float
    key: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("seconds", "counter"):
            raise ValueError(f"Every: kind must be 'seconds' or 'counter', got {self.kind!r}.")
        if not self.interval or self.interval <= 0:
            raise ValueError(f"Every: interval must be > 0, got {self.interval}.")
        if self.kind == "counter" and not self.key:
            raise ValueError("Every.counter needs the name of a stats() counter.")

    @classmethod
    def seconds(cls, interval: float) -> Every:
        """A wall-clock schedule.

        Args:
            interval: seconds between two logs.
        """
        return cls("seconds", float(interval))

    @classmethod
    def counter(cls, key: str, interval: int) -> Every:
        """A schedule on the cumulative counter ``key`` of the target's ``stats()``.

        Args:
            key: the counter's name (``"frames"``, ``"write_count"``...).
            interval: log each time the counter crosses a multiple of it.
        """
        return cls("counter", interval, key)


@dataclasses.dataclass
class _Watch:
    name: str
    stats_fn: Callable[..., Mapping[str, Any]]
    stats_kwargs: dict[str, Any]
    schedule: Every | None
    step_key: str | None
    rate_keys: tuple[str, ...] | None
    log_on_start: bool
    log_on_close: bool
    baseline: dict[str, float] = dataclasses.field(default_factory=dict)
    baseline_time: float | None = None
    last_log_time: float | None = None
    next_threshold: float | None = None
    last_counter: float | None = None
    warned: bool = False

    def threshold_after(self, counter: float) -> float:
        assert self.schedule is not None
        return (counter // self.schedule.interval + 1) * self.schedule.interval

    def due(self, snapshot: dict[str, float], now: float) -> bool:
        first = self.baseline_time is None
        schedule = self.schedule
        counter = snapshot.get(schedule.key) if schedule is not None and schedule.kind == "counter" else None
        if first:
            if counter is not None:
                self.next_threshold, self.last_counter = self.threshold_after(counter), counter
            return self.log_on_start
        if schedule is None:
            return True
        if schedule.kind == "seconds":
            return now - (self.last_log_time or self.baseline_time) >= schedule.interval
        if counter is None:
            return False
        if self.next_threshold is None:
            self.next_threshold, self.last_counter = self.threshold_after(counter), counter
            return False
        if self.last_counter is not None and counter < self.last_counter:
            # The counter went back (buffer emptied, state restored): a new baseline, no log.
            self.rebase(snapshot, now)
            self.next_threshold, self.last_counter = self.threshold_after(counter), counter
            return False
        self.last_counter = counter
        if counter < self.next_threshold:
            return False
        self.next_threshold = self.threshold_after(counter)
        return True

    def rates(self, snapshot: dict[str, float], now: float) -> dict[str, float]:
        if self.baseline_time is None or now <= self.baseline_time:
            return {}
        keys = self.rate_keys if self.rate_keys is not None else [k for k in snapshot if k in RATE_NAMES]
        out = {}
        for key in keys:
            if key in snapshot and key in self.baseline and snapshot[key] >= self.baseline[key]:
                out[RATE_NAMES.get(key, f"{key}_per_second")] = (snapshot[key] - self.baseline[key]) / (
                    now - self.baseline_time
                )
        return out

    def rebase(self, snapshot: dict[str, float], now: float) -> None:
        self.baseline, self.baseline_time = dict(snapshot), now


class LoggerMonitor:
    """Logs the ``stats()`` snapshots of watched objects (collectors, replay buffers...) through one logger.

    Each poll calls the target's ``stats()`` (or ``stats_fn``), keeps its finite numbers, adds per-second
    rates of the cumulative counters since the last log, prefixes every entry with ``"<name>/"`` and calls
    ``logger.log_metrics``. Polls run in a daemon thread (``background=True``, inside ``with monitor:`` or
    after :meth:`start`) or at each :meth:`step` call, never on the watched objects' hot paths.

    Args:
        logger: where the metrics go.

    Keyword Args:
        poll_interval: seconds between two background polls. Defaults to ``1.0``.
        background: poll in a thread (``True``) or only in :meth:`step` (``False``).
        on_error: a failing ``stats()`` or logger call ``"warn"`` once per failure streak, is ``"ignore"``\\ d or
            ``"raise"``\\ s.

    Examples:
        >>> import tempfile
        >>> from tdrl.record import CSVLogger
        >>> class Counter:
        ...     frames = 0
        ...     def stats(self):
        ...         return {"frames": self.frames}
        >>> source = Counter()
        >>> monitor = LoggerMonitor(CSVLogger("demo", log_dir=tempfile.mkdtemp()), background=False)
        >>> monitor.watch(source, schedule=Every.counter("frames", 100), log_on_start=False)
        'counter'
        >>> monitor.step()
        {}
        >>> source.frames = 150
        >>> monitor.step()["counter"]["counter/frames"]
        150.0
    """

    def __init__(
        self,
        logger: Logger,
        *,
        poll_interval: float = 1.0,
        background: bool = True,
        on_error: Literal["warn", "raise", "ignore"] = "warn",
    ) -> None:
        if on_error not in ("warn", "raise", "ignore"):
            raise ValueError(
                f"LoggerMonitor: on_error must be 'warn', 'raise' or 'ignore', got {on_error!r}."
            )
        if poll_interval <= 0:
            raise ValueError(f"LoggerMonitor: poll_interval must be > 0, got {poll_interval}.")
        self.logger = logger
        self.poll_interval = float(poll_interval)
        self.background = background
        self.on_error = on_error
        self._watches: dict[str, _Watch] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def watch(
        self,
        target: Any,
        *,
        name: str | None = None,
        schedule: Every | None = None,
        step: str | None = None,
        stats_fn: Callable[..., Mapping[str, Any]] | None = None,
        stats_kwargs: dict[str, Any] | None = None,
        rate_keys: tuple[str, ...] | None = None,
        log_on_start: bool = True,
        log_on_close: bool = True,
    ) -> str:
        """Starts monitoring ``target`` and returns the watch's name.

        Args:
            target: an object with a ``stats()`` method returning a flat mapping of numbers.

        Keyword Args:
            name: the metrics' prefix, unique in the monitor; default: the lowercase class name (``_1``, ...
                appended when taken).
            schedule: when to log; ``None`` logs at every poll.
            step: the snapshot entry used as the logging step (default: a counter schedule's key).
            stats_fn: called instead of ``target.stats``.
            stats_kwargs: keyword arguments of the snapshot call.
            rate_keys: counters to derive ``*_per_second`` rates from (default: the known counters present).
            log_on_start: log the first poll (``False``: it only sets the baseline).
            log_on_close: log a last snapshot in :meth:`stop`.

        Returns:
            The watch name (for :meth:`unwatch`).
        """
        if stats_fn is None:
            stats_fn = getattr(target, "stats", None)
            if not callable(stats_fn):
                raise TypeError(
                    f"LoggerMonitor.watch: {type(target).__name__} has no callable stats() method; "
                    "pass stats_fn=... to say how to read its statistics."
                )
        with self._lock:
            if name is None:
                base, n = type(target).__name__.lower(), 0
                name = base
                while name in self._watches:
                    n += 1
                    name = f"{base}_{n}"
            elif name in self._watches:
                raise ValueError(f"LoggerMonitor.watch: a watch named {name!r} exists already.")
            if step is None and schedule is not None and schedule.kind == "counter":
                step = schedule.key
            self._watches[name] = _Watch(
                name,
                stats_fn,
                dict(stats_kwargs or {}),
                schedule,
                step,
                None if rate_keys is None else tuple(rate_keys),
                log_on_start,
                log_on_close,
            )
        return name

    def unwatch(self, name: str) -> None:
        """Stops monitoring the watch ``name`` (the target itself is left alone).

        Args:
            name: a name returned by :meth:`watch`.
        """
        with self._lock:
            if self._watches.pop(name, None) is None:
                raise KeyError(
                    f"LoggerMonitor.unwatch: no watch named {name!r} (watches: {list(self._watches)})."
                )

    def step(self) -> dict[str, dict[str, float]]:
        """Polls every target once and logs those that are due.

        Returns:
            ``{watch name: logged metrics}`` for the targets logged by this call.
        """
        with self._lock:
            watches = list(self._watches.values())
        logged = {}
        for watch in watches:
            payload = self._poll(watch, force=False)
            if payload is not None:
                logged[watch.name] = payload
        return logged

    def start(self) -> LoggerMonitor:
        """Starts the polling thread (nothing to start with ``background=False``).

        Returns:
            The monitor.
        """
        self._stopped = False
        if self.background and self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="LoggerMonitor", daemon=True)
            self._thread.start()
        return self

    def stop(self, *, log_final: bool | None = None) -> None:
        """Stops polling and logs a last snapshot of each target (once, however often it is called).

        Args:
            log_final: overrides every watch's ``log_on_close``.
        """
        self._stop.set()
        thread, self._thread = self._thread, None
        stuck = False
        if thread is not None:
            thread.join(timeout=max(5.0, 2 * self.poll_interval))
            stuck = thread.is_alive()
        if self._stopped:
            return
        self._stopped = True
        if stuck:
            tdrl_logger.warning(
                "LoggerMonitor: the polling thread did not stop (a stats() call hangs?); no final "
                "snapshots are logged."
            )
            return
        with self._lock:
            watches = list(self._watches.values())
        for watch in watches:
            if watch.log_on_close if log_final is None else log_final:
                self._poll(watch, force=True)

    def __enter__(self) -> LoggerMonitor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_interval):
            self.step()

    def _poll(self, watch: _Watch, force: bool) -> dict[str, float] | None:
        try:
            payload = self._poll_once(watch, force)
        except Exception as err:
            if self.on_error == "raise":
                raise
            if self.on_error == "warn" and not watch.warned:
                watch.warned = True
                tdrl_logger.warning(
                    f"LoggerMonitor: polling or logging {watch.name!r} failed: {err!r} (further "
                    "failures of this watch are silent until it recovers)."
                )
            return None
        watch.warned = False
        return payload

    def _poll_once(self, watch: _Watch, force: bool) -> dict[str, float] | None:
        snapshot = {
            k: float(v)
            for k, v in watch.stats_fn(**watch.stats_kwargs).items()
            if isinstance(v, (int, float)) and math.isfinite(v)
        }
        now = time.monotonic()
        first = watch.baseline_time is None
        if not (watch.due(snapshot, now) or force):
            if first:
                watch.rebase(snapshot, now)
            return None
        payload = {f"{watch.name}/{k}": v for k, v in {**snapshot, **watch.rates(snapshot, now)}.items()}
        step = int(snapshot[watch.step_key]) if watch.step_key in snapshot else None
        self.logger.log_metrics(payload, step=step)
        watch.rebase(snapshot, now)
        watch.last_log_time = now
        return payload
