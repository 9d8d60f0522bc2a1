"""``Every`` / ``LoggerMonitor`` against TorchRL 0.14.1 (``monitor_torchrl_0_14_1.json``) and their errors."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tdrl import record
from tdrl.record import CSVLogger, Every, LoggerMonitor

sys.path.insert(0, str(Path(__file__).parent))
from _monitor_scenario import SCHEDULES, Source, run  # noqa: E402

GOLDEN = json.loads((Path(__file__).parent / "monitor_torchrl_0_14_1.json").read_text())


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_torchrl(name):
    assert json.loads(json.dumps(run(record, name))) == GOLDEN[name]


def test_rates_and_step(tmp_path):
    logger = CSVLogger("rates", log_dir=str(tmp_path))
    monitor = LoggerMonitor(logger, background=False)
    source = Source()
    monitor.watch(source, schedule=Every.counter("frames", 10), log_on_start=False)
    monitor.step()
    time.sleep(0.05)
    source.frames = 20
    logged = monitor.step()["source"]
    assert 0 < logged["source/frames_per_second"] <= 20 / 0.05
    assert logger.experiment.scalars["source/frames"] == [(20, 20.0)]  # the counter is the step


def test_background_thread_polls(tmp_path):
    logger = CSVLogger("bg", log_dir=str(tmp_path))
    source = Source()
    with LoggerMonitor(logger, poll_interval=0.01) as monitor:
        monitor.watch(source)
        deadline = time.monotonic() + 5
        while not logger.experiment.scalars.get("source/frames") and time.monotonic() < deadline:
            time.sleep(0.01)
    assert logger.experiment.scalars["source/frames"]


def test_errors(tmp_path):
    logger = CSVLogger("e", log_dir=str(tmp_path))
    with pytest.raises(ValueError, match="interval"):
        Every.seconds(0)
    with pytest.raises(ValueError, match="on_error"):
        LoggerMonitor(logger, on_error="loud")
    monitor = LoggerMonitor(logger, background=False, on_error="raise")
    with pytest.raises(TypeError, match="stats"):
        monitor.watch(object())
    monitor.watch(Source(), name="a")
    with pytest.raises(ValueError, match="exists"):
        monitor.watch(Source(), name="a")
    with pytest.raises(KeyError, match="no watch"):
        monitor.unwatch("b")

    def broken():
        raise RuntimeError("boom")

    monitor.watch(None, name="broken", stats_fn=broken)
    with pytest.raises(RuntimeError, match="boom"):
        monitor.step()
    quiet = LoggerMonitor(logger, background=False, on_error="ignore")
    quiet.watch(None, name="broken", stats_fn=broken)
    assert quiet.step() == {}
