"""A local 2-node Ray cluster for the integration tests: ``ray start --head`` plus a second ``ray start --address``.

Both run with ``--block`` as children of the test process, so stopping them ends exactly their processes
(``ray stop`` would end every Ray instance on the machine, other users' included).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT = 240  # ray start can take a minute or more on a loaded 2-core machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_cli() -> list[str]:
    exe = Path(sys.executable).with_name("ray")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # ray start --block then ends the node's processes
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def wait_for_nodes(ray, n: int, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while sum(node["Alive"] for node in ray.nodes()) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the Ray cluster did not reach {n} nodes within {timeout}s: {ray.nodes()}")
        time.sleep(1)


@contextmanager
def two_node_cluster(head_cpus: int = 2, worker_cpus: int = 2) -> Iterator[str]:
    """Starts a head and a worker node on this machine and yields the head's ``HOST:PORT``."""
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="tdrl-ray-")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    address = f"127.0.0.1:{port}"
    common = ["--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1"]
    procs: list[subprocess.Popen] = []
    try:
        procs.append(subprocess.Popen(
            [*ray_cli(), "start", "--head", f"--port={port}", f"--num-cpus={head_cpus}", f"--temp-dir={temp}",
             "--include-dashboard=false", *common], env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + START_TIMEOUT
        while True:  # the worker can only join once the head's GCS answers
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if procs[0].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ray start --head failed")
            time.sleep(0.5)
        procs.append(subprocess.Popen(
            [*ray_cli(), "start", f"--address={address}", f"--num-cpus={worker_cpus}", *common], env=env,
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        yield address
    finally:
        for proc in reversed(procs):
            _stop(proc)
        shutil.rmtree(temp, ignore_errors=True)
