"""The ``ParallelEnv`` worker process: builds one sub-env, then serves commands over a pipe.

Protocol (parent -> worker, one ``send_bytes`` message; the first byte is the command):

* ``b"r"`` step and maybe reset, ``b"s"`` step: actions are read from the shared action buffer, results
  written to the shared ``next`` (and ``root``) buffers;
* ``b"R" + pickle({"mask", "kwargs"})`` reset; ``b"S" + pickle((seed, static_seed))`` seed;
* ``b"T" + pickle((max_steps, action_seed))``: a whole random-action rollout, returned pickled;
* ``b"c"`` close.

The worker answers ``b"k"`` (plus a pickled payload for seeds), or ``b"e" + pickle(traceback text)`` when
the command raised; the worker then keeps serving. At start-up it sends its specs once, then receives its
slices of the shared buffers. Only one byte crosses the pipe each way per step.
"""

from __future__ import annotations

import os
import pickle
import signal
import traceback
from collections.abc import Callable
from typing import Any

import cloudpickle
import torch

from tdrl._utils.processes import watch_parent
from tdrl.envs.batched._runner import EnvRunner, copy_into

__all__ = ["CloudpickleWrapper", "recv_command", "worker_main"]

_POLL_S = 2.0


class CloudpickleWrapper:
    """Makes lambdas and closures picklable for the ``spawn`` start method."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __getstate__(self) -> bytes:
        return cloudpickle.dumps(self.fn)

    def __setstate__(self, state: bytes) -> None:
        self.fn = cloudpickle.loads(state)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _error(conn: Any) -> None:
    conn.send_bytes(b"e" + pickle.dumps(traceback.format_exc()))


def recv_command(conn: Any, parent_pid: int) -> bytes | None:
    """The next command from the parent (polled every 2 s), or None when the parent is gone.

    Shared by the batched-env and the collector workers.
    """
    while not conn.poll(_POLL_S):
        if os.getppid() != parent_pid:
            return None
    try:
        return conn.recv_bytes()
    except (EOFError, OSError):
        return None


def worker_main(conn: Any, create_env_fn: Callable[..., Any], env_kwargs: dict, num_threads: int,
                parent_pid: int, death_signal: bool = True) -> None:
    """Entry point of a worker process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it kills us
    watch_parent(parent_pid, use_death_signal=death_signal)  # exit with the parent, even mid-step
    torch.set_num_threads(num_threads)
    try:
        env = create_env_fn(**env_kwargs)
        runner = EnvRunner(env)
        meta = (env.output_spec, env.input_spec, env.batch_size, env.device)
        conn.send_bytes(b"k" + pickle.dumps(meta))
    except Exception:  # noqa: BLE001 - reported to the parent, which raises
        _error(conn)
        return
    msg = recv_command(conn, parent_pid)
    if msg is None:
        return
    actions, nxt, root = pickle.loads(msg)
    layout = runner.layout
    actions_d = {k: actions.get(k) for k in layout.action_keys}
    next_d = {k: nxt.get(k) for k in layout.next_keys}
    root_d = {k: root.get(k) for k in layout.root_keys}
    _serve(conn, runner, actions_d, next_d, root_d, parent_pid)


def _serve(conn: Any, runner: EnvRunner, actions: dict, nxt: dict, root: dict, parent_pid: int) -> None:
    send = conn.send_bytes
    while True:
        msg = recv_command(conn, parent_pid)
        if msg is None:
            runner.env.close(raise_if_closed=False)
            return
        op = msg[:1]
        try:
            if op == b"r":
                out, new_root = runner.step_and_maybe_reset(actions)
                copy_into(nxt, out)
                copy_into(root, new_root)
                send(b"k")
            elif op == b"s":
                copy_into(nxt, runner.step(actions))
                send(b"k")
            elif op == b"R":
                args = pickle.loads(msg[1:])
                copy_into(root, runner.reset(mask=args["mask"], **args["kwargs"]))
                send(b"k")
            elif op == b"T":
                max_steps, action_seed = pickle.loads(msg[1:])
                send(b"k" + pickle.dumps(runner.rollout(max_steps, action_seed)))
            elif op == b"S":
                seed, static_seed = pickle.loads(msg[1:])
                send(b"k" + pickle.dumps(runner.set_seed(seed, static_seed)))
            elif op == b"c":
                runner.env.close(raise_if_closed=False)
                send(b"k")
                return
            else:
                raise ValueError(f"ParallelEnv worker: unknown command {op!r}")
        except Exception:  # noqa: BLE001 - reported to the parent, which raises
            _error(conn)
