"""Soak: a continuous collect-and-train run keeps its memory, open files, processes and throughput flat.

``benchmarks/soak.py`` holds the workload and the verdict (last third vs first third; the tolerances and
why are in its docstring). The slow test runs it for 2.5 minutes (CI: ``ci_slow_subset.txt``); the fast
tests check that the verdict flags each kind of leak, so a broken verdict cannot pass silently.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "soak.py"


def _soak_module():
    spec = importlib.util.spec_from_file_location("tdrl_benchmarks_soak", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(n: int = 12, **growth) -> list[dict]:
    base = {"rss_mb": 300.0, "workers_rss_mb": 500.0, "open_fds": 30, "children": 2, "frames_per_s": 2000.0}
    return [{k: v + growth.get(k, 0) * i for k, v in base.items()} for i in range(n)]


def test_verdict_passes_a_flat_run():
    assert _soak_module().verdict(_rows())["problems"] == []


@pytest.mark.parametrize(
    "growth, problem",
    [({"rss_mb": 8.0}, "rss_mb grew"), ({"workers_rss_mb": 10.0}, "workers_rss_mb grew"),
     ({"open_fds": 1}, "open_fds grew"), ({"children": 1}, "children grew"),
     ({"frames_per_s": -170.0}, "throughput fell")],
)
def test_verdict_flags_each_leak(growth, problem):
    problems = _soak_module().verdict(_rows(**growth))["problems"]
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_verdict_tolerates_allocator_noise():
    rows = _rows()
    for i, row in enumerate(rows):
        row["rss_mb"] += (5.0 if i % 2 else -5.0)  # +-5 MB wobble, no trend
        row["frames_per_s"] *= 0.7 if i % 3 == 0 else 1.0  # load on a shared machine
    assert _soak_module().verdict(rows)["problems"] == []


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_soak_stays_flat(tmp_path):
    out = tmp_path / "soak.csv"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--minutes", "2.5", "--interval", "10", "--out", str(out)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=400)
    rows = list(csv.DictReader(out.open()))
    assert len(rows) >= 12, (rows, proc.stderr[-3000:])
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0 and result["problems"] == [], (result, proc.stderr[-3000:])
