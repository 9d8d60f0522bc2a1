"""Worker processes: how they start, how long the parent waits for them, and how they die with the parent.

Shared by ``ParallelEnv`` and the multi-process collectors:

* :func:`default_start_method` picks ``fork`` or ``spawn``;
* :func:`check_worker_timeout` validates the ``worker_timeout`` argument (:data:`DEFAULT_WORKER_TIMEOUT`
  seconds by default, ``None`` to wait forever) and :func:`kill_hung_worker` turns an expired wait into a
  :class:`WorkerTimeoutError` naming the worker, its pid and the call it was in;
* :func:`watch_parent`, called first thing in a worker, makes the worker exit when its parent dies, even
  while it is busy in env code (a blocking ``step`` never returns to the command loop that used to notice).
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from typing import Any

import torch

__all__ = [
    "DEFAULT_WORKER_TIMEOUT",
    "WorkerTimeoutError",
    "check_worker_timeout",
    "default_start_method",
    "kill_hung_worker",
    "watch_parent",
]

#: Seconds the parent waits for one answer of a worker before killing it. Generous on purpose: it must
#: never fire on a slow but healthy env (a simulator reset, a collector batch of many steps).
DEFAULT_WORKER_TIMEOUT = 300.0

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


class WorkerTimeoutError(RuntimeError, TimeoutError):
    """A worker process did not answer within ``worker_timeout`` seconds; it was killed.

    A ``RuntimeError`` like every other worker failure (code catching those keeps working), and a
    ``TimeoutError`` for code that tells timeouts apart.
    """


def default_start_method() -> str:
    """``"fork"`` where the platform has it and this process has not initialised CUDA, else ``"spawn"``.

    Forking is the cheapest start (no pickling of the env factory or the policy), but a forked child cannot
    use CUDA once its parent has initialised it.

    Examples:
        >>> default_start_method() in ("fork", "spawn")
        True
    """
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    return "fork" if "fork" in mp.get_all_start_methods() and not cuda else "spawn"


def check_worker_timeout(value: Any, owner: str) -> float | None:
    """``value`` as a float number of seconds (or ``None``: no timeout); raises a clear error otherwise.

    Examples:
        >>> check_worker_timeout(10, "ParallelEnv")
        10.0
        >>> check_worker_timeout(None, "ParallelEnv") is None
        True
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{owner}: worker_timeout must be a positive number of seconds or None, got {value!r}")
    return float(value)


def kill_hung_worker(owner: str, index: int, proc: Any, what: str, timeout: float) -> WorkerTimeoutError:
    """Kills worker ``index`` (a ``multiprocessing.Process``) and returns the error to raise.

    Examples:
        >>> class Proc:  # a stand-in for an already dead process
        ...     pid = 1234
        ...     def kill(self): pass
        ...     def join(self, timeout=None): pass
        >>> str(kill_hung_worker("ParallelEnv", 1, Proc(), "step", 300.0))
        "ParallelEnv worker 1 (pid 1234) did not answer 'step' within 300.0 s; it was killed"
    """
    proc.kill()
    proc.join(5.0)
    return WorkerTimeoutError(f"{owner} worker {index} (pid {proc.pid}) did not answer {what!r} within "
                              f"{timeout} s; it was killed")


def _set_parent_death_signal() -> bool:
    """Asks Linux to SIGKILL this process when its parent dies; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int, poll_s: float) -> None:
    while True:
        time.sleep(poll_s)
        if os.getppid() != parent_pid:
            os._exit(1)  # no cleanup: the parent that owned our shared buffers is gone


def watch_parent(parent_pid: int, *, use_death_signal: bool = True, poll_s: float = 0.5) -> None:
    """Makes this worker process exit when ``parent_pid`` (its parent) dies, even while it is busy.

    Two layers: on Linux the kernel's parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), which
    works even when the worker is stuck in C code holding the GIL; everywhere a daemon thread polling
    ``os.getppid()`` every ``poll_s`` seconds, which works while the worker runs Python code or sleeps.
    Linux sends the death signal when the parent *thread* that started the worker exits, so the parent
    passes ``use_death_signal=False`` when it starts workers from a thread other than its main thread.

    Args:
        parent_pid: the pid of the process that started this worker.

    Keyword Args:
        use_death_signal: also arm the Linux parent-death signal.
        poll_s: the watchdog thread's polling period.
    """
    if use_death_signal:
        _set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid, poll_s), daemon=True, name="tdrl-parent-watchdog").start()
