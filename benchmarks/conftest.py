"""Benchmark-suite options: ``--backend tdrl|torchrl`` selects the library under test."""

from __future__ import annotations

import os
import time
from collections import defaultdict

import pytest

_CALL_TIMES: dict[str, float] = defaultdict(float)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        default="tdrl",
        choices=("tdrl", "torchrl"),
        help="library to benchmark: tdrl (default) or torchrl (run from the TorchRL anchor venv)",
    )
    # TorchRL's CI passes a dummy --rank; accept it so its command lines work here too.
    parser.addoption("--rank", default="0", help="ignored (TorchRL CI compatibility)")


def pytest_configure(config: pytest.Config) -> None:
    backend = config.getoption("--backend")
    os.environ["TDRL_BENCH_BACKEND"] = backend
    # TorchRL's nightly benchmark settings (its loss benchmarks need COMPOSITE_LP_AGGREGATE=0).
    os.environ.setdefault("COMPOSITE_LP_AGGREGATE", "0")
    os.environ.setdefault("TD_GET_DEFAULTS_TO_NONE", "1")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    config.stash[_BACKEND_KEY] = backend


_BACKEND_KEY = pytest.StashKey[str]()


def pytest_report_header(config: pytest.Config) -> str:
    import torch

    backend = config.stash[_BACKEND_KEY]
    try:
        mod = __import__(backend)
        version = getattr(mod, "__version__", "?")
    except ImportError as err:  # reported, then every test fails to import
        version = f"not importable ({err})"
    return f"benchmark backend: {backend} {version}, torch {torch.__version__}, threads {torch.get_num_threads()}"


@pytest.fixture(autouse=True)
def _measure_call_time(request: pytest.FixtureRequest):
    t0 = time.perf_counter()
    yield
    _CALL_TIMES[request.node.name] += time.perf_counter() - t0


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    if not _CALL_TIMES:
        return
    terminalreporter.section("call times (setup + timed rounds)")
    for name, t in sorted(_CALL_TIMES.items(), key=lambda kv: -kv[1])[:15]:
        terminalreporter.write_line(f"{t:8.2f} s  {name}")
