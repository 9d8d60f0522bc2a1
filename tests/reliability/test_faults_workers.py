"""Worker faults for every multi-process component: a worker that is killed, raises or hangs, a Ctrl-C while
workers hang, and a parent that dies under busy workers. Each case ends with a clear error (or a prompt exit)
and no process left behind.

Components: ``ParallelEnv``, ``MultiSyncCollector``, ``MultiAsyncCollector`` and ``AsyncCollector``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time

import pytest

from tdrl._utils.processes import WorkerTimeoutError
from tdrl.collectors import AsyncCollector, MultiAsyncCollector, MultiSyncCollector
from tdrl.envs import ParallelEnv, PendulumEnv
from tests.collectors._helpers import pid_alive, wait_gone

COMPONENTS = ["ParallelEnv", "MultiSyncCollector", "MultiAsyncCollector", "AsyncCollector"]
# What each component is doing when its worker misbehaves, as named in its error message.
CALL = {"ParallelEnv": "step_and_maybe_reset", "MultiSyncCollector": "collection",
        "MultiAsyncCollector": "collection", "AsyncCollector": "collection"}


class FaultyPendulum(PendulumEnv):
    """A pendulum that misbehaves from its ``after``-th step: ``"raise"`` or ``"hang"`` (sleeps for hours)."""

    def __init__(self, fault: str | None = None, after: int = 5) -> None:
        super().__init__()
        self.__dict__["_fault"], self.__dict__["_after"], self.__dict__["_n"] = fault, after, 0

    def _step(self, tensordict):
        self.__dict__["_n"] += 1
        if self._fault is not None and self._n >= self._after:
            if self._fault == "raise":
                raise ValueError("boom in the env")
            time.sleep(10_000)  # a simulator that never returns
        return super()._step(tensordict)


def healthy() -> FaultyPendulum:
    return FaultyPendulum()


def raising() -> FaultyPendulum:
    return FaultyPendulum("raise")


def hanging() -> FaultyPendulum:
    return FaultyPendulum("hang")


def build(name: str, faulty, **kwargs):
    """The component with worker 0 healthy and the last worker built by ``faulty``."""
    if name == "ParallelEnv":
        return ParallelEnv(2, [healthy, faulty], **kwargs)
    if name == "AsyncCollector":
        return AsyncCollector(faulty, frames_per_batch=10, total_frames=-1, **kwargs)
    cls = MultiSyncCollector if name == "MultiSyncCollector" else MultiAsyncCollector
    return cls([healthy, faulty], frames_per_batch=10, total_frames=-1, **kwargs)


def start(component, name: str) -> list[int]:
    """Starts the workers (a ParallelEnv is lazy) and returns their pids."""
    if name == "ParallelEnv":
        component.reset()
    return list(component.worker_pids)


def run(component, name: str, seconds: float = 20.0) -> None:
    """Steps (with a policy: the per-step path) or collects until an error, for at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if name == "ParallelEnv":
            component.rollout(20, policy=component.rand_action, break_when_any_done=False)
        else:
            component.next()


def close(component, name: str) -> None:
    if name == "ParallelEnv":
        component.close(raise_if_closed=False)
    else:
        component.shutdown()


def faulty_index(name: str) -> int:
    return 0 if name == "AsyncCollector" else 1


# ---------------------------------------------------------------------------------------------- in-process


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", COMPONENTS)
def test_killed_worker_is_reported_and_cleaned_up(name):
    component = build(name, healthy)
    pids = start(component, name)
    os.kill(pids[-1], signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"worker {faulty_index(name)} \(pid {pids[-1]}\) died"):
        run(component, name)
    assert time.monotonic() - t0 < 10
    assert wait_gone(pids), "a worker outlived the failure"
    close(component, name)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", COMPONENTS)
def test_raising_worker_forwards_its_traceback(name):
    component = build(name, raising)
    pids = start(component, name)
    with pytest.raises(RuntimeError, match=rf"(?s)worker {faulty_index(name)} .*raised.*boom in the env"):
        run(component, name)
    if name != "ParallelEnv":  # a ParallelEnv worker survives its env's exception; collectors stop
        assert wait_gone(pids)
    close(component, name)
    assert wait_gone(pids)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", COMPONENTS)
def test_hung_worker_times_out_with_pid_and_call(name):
    component = build(name, hanging, worker_timeout=2.0)
    pids = start(component, name)
    t0 = time.monotonic()
    pattern = (rf"{name} worker {faulty_index(name)} \(pid {pids[-1]}\) did not answer "
               rf"'{CALL[name]}' within 2.0 s; it was killed")
    with pytest.raises(WorkerTimeoutError, match=pattern):
        run(component, name)
    elapsed = time.monotonic() - t0
    assert 1.5 <= elapsed < 8.0, elapsed
    assert wait_gone(pids, 5.0), "the hung worker (or a healthy one) was left behind"
    close(component, name)


@pytest.mark.timeout(60)
def test_hung_worker_start_up_times_out():
    def never_built():
        time.sleep(10_000)

    t0 = time.monotonic()
    with pytest.raises(WorkerTimeoutError, match=r"worker 1 \(pid \d+\) did not answer 'start-up' within 1.0 s"):
        MultiSyncCollector([healthy, never_built], frames_per_batch=10, worker_timeout=1.0)
    with pytest.raises(WorkerTimeoutError, match=r"ParallelEnv worker 0 .* 'start-up' within 1.0 s"):
        ParallelEnv(1, never_built, worker_timeout=1.0).reset()
    assert time.monotonic() - t0 < 12
    assert wait_gone([p.pid for p in mp.active_children()], 5.0)


class SlowPendulum(PendulumEnv):
    """0.1 s per step: a collector batch of 10 frames takes a second, longer than a poll period."""

    def _step(self, tensordict):
        time.sleep(0.1)
        return super()._step(tensordict)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", COMPONENTS)
def test_slow_but_healthy_worker_is_not_killed_and_none_disables(name):
    """The timeout counts one answer, not a run: answers slower than a poll period but within it pass."""
    for timeout in (1.0 if name == "ParallelEnv" else 8.0, None):
        component = build(name, SlowPendulum, worker_timeout=timeout)
        if name == "ParallelEnv":
            assert component.rollout(4)["next", "reward"].shape == (2, 4, 1)
        else:
            assert component.next().numel() == 10
        close(component, name)


@pytest.mark.parametrize("bad", [0, -1.0, "300", True])
def test_worker_timeout_is_validated(bad):
    with pytest.raises(ValueError, match=rf"worker_timeout must be a positive number of seconds or None, got {bad!r}"):
        ParallelEnv(2, healthy, worker_timeout=bad)
    with pytest.raises(ValueError, match="worker_timeout must be a positive number"):
        MultiSyncCollector([healthy], frames_per_batch=10, worker_timeout=bad)


# ---------------------------------------------------------------------------------------------- a parent process
# The "parent" is a forked child of the test process (it starts in milliseconds; a fresh interpreter takes
# tens of seconds to import torch on a loaded CI machine): it builds the component, reports the worker pids,
# and runs until its faulty worker hangs. The test then interrupts or kills it.


def _parent(name: str, nested: bool, conn) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a Ctrl-C raises KeyboardInterrupt, as in a script
    if nested:
        component = MultiSyncCollector([_nested_env], frames_per_batch=20, total_frames=-1)
        conn.send(list(component.worker_pids))
    else:
        component = build(name, hanging)
        conn.send(start(component, name))
    try:
        run(component, "MultiSyncCollector" if nested else name, seconds=600)
    except KeyboardInterrupt:
        conn.send("interrupted")


def _nested_env():
    env = ParallelEnv(2, [healthy, hanging])
    env.reset()
    with open(os.environ["TDRL_TEST_GRANDCHILDREN"], "a") as f:
        f.write(" ".join(map(str, env.worker_pids)) + "\n")
    return env


def _launch(name: str, nested: bool = False) -> tuple[mp.Process, list[int], object]:
    ctx = mp.get_context("fork")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=_parent, args=(name, nested, theirs), daemon=False)  # it has children
    proc.start()
    theirs.close()
    if not ours.poll(60):
        proc.kill()
        pytest.fail("the parent process did not start its workers")
    pids = ours.recv()
    time.sleep(1.0)  # the faulty worker is now stuck in its step
    return proc, pids, ours


@pytest.mark.timeout(90)
@pytest.mark.parametrize("name", COMPONENTS)
def test_ctrl_c_with_a_hung_worker_exits_within_seconds(name):
    proc, pids, conn = _launch(name)
    try:
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        proc.join(30)
        elapsed = time.monotonic() - t0
        assert conn.poll(0) and conn.recv() == "interrupted", "the parent did not see a KeyboardInterrupt"
    finally:
        proc.kill()
    assert elapsed < 4.0, f"{name}: Ctrl-C took {elapsed:.1f} s with a hung worker"
    assert wait_gone(pids, 1.0), "a worker outlived the interrupted parent"


@pytest.mark.timeout(90)
@pytest.mark.parametrize("name", COMPONENTS)
def test_workers_exit_when_the_parent_dies_mid_step(name):
    proc, pids, _ = _launch(name)
    proc.kill()  # SIGKILL: no atexit, no cleanup in the parent
    proc.join(30)
    assert wait_gone(pids, 5.0), f"{name}: orphan workers {[p for p in pids if pid_alive(p)]}"


@pytest.mark.timeout(90)
def test_grandchildren_exit_when_the_top_parent_dies(tmp_path, monkeypatch):
    """A collector worker that owns a ParallelEnv: killing the top process takes both levels down."""
    record = tmp_path / "grandchildren.txt"
    monkeypatch.setenv("TDRL_TEST_GRANDCHILDREN", str(record))
    proc, pids, _ = _launch("MultiSyncCollector", nested=True)
    grandchildren = [int(p) for p in record.read_text().split()]
    assert len(grandchildren) == 2
    proc.kill()
    proc.join(30)
    everyone = pids + grandchildren
    assert wait_gone(everyone, 5.0), f"orphans: {[p for p in everyone if pid_alive(p)]}"
