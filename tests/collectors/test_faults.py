"""Worker faults, shutdown, garbage collection and Ctrl-C: clear errors, no orphan process, no leaked shm."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tdrl.collectors import MultiAsyncCollector, MultiSyncCollector
from tdrl.envs import PendulumEnv
from tests.collectors._helpers import live_children, pendulum, wait_gone


class CrashingPendulum(PendulumEnv):
    """Raises on its 30th step."""

    def _step(self, tensordict):
        self.__dict__["_n"] = self.__dict__.get("_n", 0) + 1
        if self.__dict__["_n"] >= 30:
            raise ValueError("boom in the env")
        return super()._step(tensordict)


def _torch_shm() -> set[str]:
    return {f for f in os.listdir("/dev/shm") if f.startswith("torch_")} if os.path.isdir("/dev/shm") else set()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("cls", [MultiSyncCollector, MultiAsyncCollector])
def test_worker_that_raises_is_reported(cls):
    shm = _torch_shm()
    c = cls([pendulum, CrashingPendulum], frames_per_batch=10, total_frames=-1)
    pids = c.worker_pids
    with pytest.raises(RuntimeError, match="worker 1 .*raised during collection(.|\n)*boom in the env"):
        for _ in range(20):
            c.next()
    assert wait_gone(pids)
    assert not set(live_children()) & set(pids)
    assert _torch_shm() <= shm
    with pytest.raises(RuntimeError, match="shut down"):
        c.next()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("cls", [MultiSyncCollector, MultiAsyncCollector])
def test_killed_worker_is_reported(cls):
    c = cls([pendulum, pendulum], frames_per_batch=10, total_frames=-1)
    pids = c.worker_pids
    c.next()
    os.kill(pids[0], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="worker 0 .*died"):
        for _ in range(50):
            c.next()
    assert time.monotonic() - start < 30  # a generous bound: the point is "no hang"
    assert wait_gone(pids)


@pytest.mark.timeout(60)
def test_start_up_error_is_reported():
    def bad_env():
        raise OSError("no such simulator")

    with pytest.raises(RuntimeError, match="start-up(.|\n)*no such simulator"):
        MultiSyncCollector([pendulum, bad_env], frames_per_batch=10)
    assert wait_gone(live_children())


@pytest.mark.timeout(60)
def test_shutdown_and_garbage_collection_leave_no_process():
    c = MultiAsyncCollector([pendulum, pendulum], frames_per_batch=10, total_frames=-1)
    c.next()
    pids = c.worker_pids
    c.shutdown()
    c.shutdown()  # idempotent
    assert wait_gone(pids, 1.0)
    c = MultiSyncCollector([pendulum, pendulum], frames_per_batch=10, total_frames=-1)
    it = iter(c)
    next(it)
    pids = c.worker_pids
    del c, it
    gc.collect()
    assert wait_gone(pids)


_SCRIPT = textwrap.dedent(
    """
    import sys
    from tdrl.collectors import MultiSyncCollector
    from tdrl.envs import PendulumEnv
    c = MultiSyncCollector([PendulumEnv, PendulumEnv], frames_per_batch=10, total_frames=-1)
    print(" ".join(map(str, c.worker_pids)), flush=True)
    for batch in c:
        pass
    """
)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("exit_kind", ["sigint", "exit"])
def test_ctrl_c_and_interpreter_exit_stop_every_worker(exit_kind):
    script = _SCRIPT if exit_kind == "sigint" else _SCRIPT.replace("for batch in c:\n    pass", "c.next()")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2
    if exit_kind == "sigint":
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    if exit_kind == "sigint":
        assert "KeyboardInterrupt" in err
    else:
        assert proc.returncode == 0, err
    assert wait_gone(pids)
