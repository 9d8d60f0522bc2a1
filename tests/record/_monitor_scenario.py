"""The scenario of ``test_monitoring.py`` (library-agnostic: the caller passes its ``record`` module)."""

from __future__ import annotations

import tempfile
from typing import Any

# (frames, write_count) after each step; the drop at step 5 is a reset.
COUNTS = [(0, 0), (40, 10), (120, 30), (130, 31), (260, 70), (20, 5), (90, 20), (250, 64)]

SCHEDULES = {
    "counter_frames_100": ("counter", "frames", 100, True),
    "counter_writes_25_no_start": ("counter", "write_count", 25, False),
    "every_poll": (None, None, None, True),
    "every_poll_no_start": (None, None, None, False),
}


class Source:
    """An object with TorchRL's ``stats()`` interface."""

    def __init__(self) -> None:
        self.frames, self.write_count = 0, 0

    def stats(self) -> dict[str, Any]:
        return {"frames": self.frames, "write_count": self.write_count, "label": "x", "ratio": 0.5}


def run(record: Any, name: str) -> list[Any]:
    """Per step: ``None`` when nothing was logged, else the sorted metric names and the non-rate values."""
    kind, key, interval, log_on_start = SCHEDULES[name]
    schedule = None if kind is None else record.Every.counter(key, interval)
    logger = record.CSVLogger("m", log_dir=tempfile.mkdtemp())
    monitor = record.LoggerMonitor(logger, background=False)
    source = Source()
    monitor.watch(source, name="src", schedule=schedule, log_on_start=log_on_start)
    out = []
    for frames, writes in COUNTS:
        source.frames, source.write_count = frames, writes
        logged = monitor.step().get("src")
        if logged is None:
            out.append(None)
        else:
            out.append([sorted(logged), {k: v for k, v in logged.items() if "per_second" not in k}])
    monitor.stop()
    return out
