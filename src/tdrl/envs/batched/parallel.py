"""``ParallelEnv``: several envs stepped concurrently in worker processes, through shared memory.

Design:

* buffers are allocated once, after the workers report their specs: an action buffer, a ``next`` buffer
  (step outputs) and a ``root`` buffer (reset outputs / next-step inputs), all in shared memory; each
  worker writes its slice in place and the parent copies the results out, so nothing is pickled per step;
* one byte goes to each worker per command and one byte comes back: ``step_and_maybe_reset`` (what
  ``rollout`` calls) is a single round trip, with each worker resetting itself when done;
* a worker that raises reports its traceback (the parent raises ``RuntimeError``); a worker that dies is
  seen through its closed pipe or ``is_alive()`` within a fraction of a second: the parent then stops the
  others and raises;
* a worker that does not answer within ``worker_timeout`` seconds is killed and reported
  (:class:`~tdrl._utils.processes.WorkerTimeoutError`); the deadline is only computed once the first
  ``poll`` has waited in vain, so a healthy step pays nothing for it;
* Ctrl-C is the parent's: workers ignore SIGINT, and a ``KeyboardInterrupt`` while the parent waits kills
  every worker at once (a hung one would never answer a polite close). Workers are daemonic and exit when
  the parent process dies, even in the middle of a step (:func:`~tdrl._utils.processes.watch_parent`).
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import pickle
import threading
import time
import weakref
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl._utils.processes import default_start_method, kill_hung_worker
from tdrl.envs._fast_td import fast_td
from tdrl.envs.batched._base import BatchedEnvBase
from tdrl.envs.batched._runner import Layout
from tdrl.envs.batched._worker import CloudpickleWrapper, worker_main
from tdrl.envs.batched.serial import SerialEnv

__all__ = ["ParallelEnv"]

_POLL_S = 0.2
_LIVE: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for env in list(_LIVE):
        try:
            env.close(raise_if_closed=False)
        except Exception:  # noqa: BLE001 - interpreter shutdown: best effort
            pass


class ParallelEnv(BatchedEnvBase):
    """Runs ``num_workers`` copies of an env in worker processes, as one env of batch ``[num_workers, ...]``.

    See :class:`~tdrl.envs.batched._base.BatchedEnvBase` for the arguments.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> env = ParallelEnv(2, PendulumEnv)
        >>> env.rollout(3)["next", "reward"].shape
        torch.Size([2, 3, 1])
        >>> env.close()
    """

    def __new__(cls, num_workers: int = 1, *args: Any, serial_for_single: bool = False, **kwargs: Any) -> Any:
        if serial_for_single and num_workers == 1:
            return SerialEnv(num_workers, *args, **kwargs)
        return super().__new__(cls)

    # ------------------------------------------------------------------ start / stop
    def _context(self) -> Any:
        method = self.mp_start_method
        if method is None:
            method = default_start_method()
        return mp.get_context(method)

    def _start(self) -> None:
        # The parent mostly waits on the workers: its intra-op threads would only compete with them for
        # the cores (measured: 5x slower rollouts on 2 cores). TorchRL also lowers the parent's threads.
        threads = self.num_threads
        if threads is None:
            threads = max(1, (os.cpu_count() or 1) - self.num_workers)
        torch.set_num_threads(threads)
        ctx = self._context()
        fork = ctx.get_start_method() == "fork"
        conns, procs = [], []
        self.__dict__["_conns"], self.__dict__["_procs"] = conns, procs
        # Linux's parent-death signal follows the starting *thread*: only arm it from the main thread.
        death_signal = threading.current_thread() is threading.main_thread()
        for fn, kwargs in zip(self.create_env_fn, self.create_env_kwargs):
            parent_conn, child_conn = ctx.Pipe()
            target_fn = fn if fork else CloudpickleWrapper(fn)
            proc = ctx.Process(
                target=worker_main,
                args=(child_conn, target_fn, kwargs, self.num_sub_threads, os.getpid(), death_signal),
                daemon=True,
            )
            proc.start()
            child_conn.close()
            conns.append(parent_conn)
            procs.append(proc)
        _LIVE.add(self)
        try:
            metas = [pickle.loads(self._wait(i, "start-up")) for i in range(self.num_workers)]
            self._install(metas)
        except BaseException:
            self._shutdown(force=True)
            raise

    def _install(self, metas: list[tuple]) -> None:
        output_spec, input_spec, sub_batch, sub_device = metas[0]
        for i, meta in enumerate(metas[1:], 1):
            if meta[2] != sub_batch:
                raise ValueError(
                    f"ParallelEnv: worker {i} env has batch_size {tuple(meta[2])}, worker 0 has {tuple(sub_batch)}"
                )
        self._set_metadata(output_spec, input_spec, sub_batch, sub_device, None)
        layout = Layout(self)  # the key lists of the (expanded) specs
        self.__dict__["_layout"] = layout
        actions = self.full_action_spec.zero()
        nxt = TensorDict({}, self.batch_size)
        nxt.update(self.full_observation_spec.zero())
        nxt.update(self.full_reward_spec.zero())
        nxt.update(self.full_done_spec.zero())
        root = TensorDict({}, self.batch_size)
        root.update(self.full_observation_spec.zero())
        root.update(self.full_done_spec.zero())
        root.update(self.full_state_spec.zero())
        nxt, root = nxt.select(*layout.next_keys), root.select(*layout.root_keys)
        if self.shared_memory:
            actions.share_memory_()
            nxt.share_memory_()
            root.share_memory_()
        self.__dict__["_shm_buffers"] = (actions, nxt, root)  # not "_buffers": nn.Module keeps its own there
        self.__dict__["_buf_actions"] = {k: actions.get(k) for k in layout.action_keys}
        self.__dict__["_buf_next"] = {k: nxt.get(k) for k in layout.next_keys}
        self.__dict__["_buf_root"] = {k: root.get(k) for k in layout.root_keys}
        for i, conn in enumerate(self.__dict__["_conns"]):
            conn.send((actions[i], nxt[i], root[i]))

    def _shutdown(self, force: bool = False) -> None:
        conns = self.__dict__.pop("_conns", [])
        procs = self.__dict__.pop("_procs", [])
        if not force:
            for conn, proc in zip(conns, procs):
                if proc.is_alive():
                    try:
                        conn.send_bytes(b"c")
                    except (OSError, ValueError):
                        pass
        for proc in procs:
            proc.join(0 if force else self.shutdown_timeout)
            if proc.is_alive():
                proc.kill()
                proc.join(5.0)
        for conn in conns:
            conn.close()
        for key in ("_shm_buffers", "_buf_actions", "_buf_next", "_buf_root"):
            self.__dict__.pop(key, None)
        _LIVE.discard(self)

    @property
    def worker_pids(self) -> list[int]:
        """The process ids of the workers (empty when not started)."""
        return [p.pid for p in self.__dict__.get("_procs", [])]

    # ------------------------------------------------------------------ messaging
    def _fail(self, index: int, what: str) -> None:
        proc = self.__dict__["_procs"][index]
        proc.join(1.0)
        code = proc.exitcode
        self.close(raise_if_closed=False)
        raise RuntimeError(
            f"ParallelEnv: worker {index} (pid {proc.pid}) died during {what} (exit code {code}); "
            "all workers were stopped and their buffers released"
        )

    def _timed_out(self, index: int, what: str) -> None:
        err = kill_hung_worker("ParallelEnv", index, self.__dict__["_procs"][index], what, self.worker_timeout)
        self._shutdown(force=True)
        self.close(raise_if_closed=False)
        raise err

    def _wait(self, index: int, what: str) -> bytes:
        """Waits for worker ``index``'s answer; raises if it reported an error, died or timed out."""
        conn = self.__dict__["_conns"][index]
        proc = self.__dict__["_procs"][index]
        deadline = None
        while not conn.poll(_POLL_S):
            if not proc.is_alive():
                self._fail(index, what)
            timeout = self.worker_timeout
            if timeout is not None:
                now = time.monotonic()
                if deadline is None:  # first slow answer: the wait started one poll ago
                    deadline = now - _POLL_S + timeout
                elif now >= deadline:
                    self._timed_out(index, what)
        try:
            msg = conn.recv_bytes()
        except (EOFError, OSError):
            self._fail(index, what)
        if msg[:1] == b"e":
            raise RuntimeError(f"ParallelEnv: worker {index} raised during {what}:\n{pickle.loads(msg[1:])}")
        return msg[1:]

    def _command(self, workers: Any, msg: bytes, what: str) -> list[bytes]:
        return self._command_each({i: msg for i in workers}, what)

    def _command_each(self, msgs: dict[int, bytes], what: str) -> list[bytes]:
        """Sends each worker its message, then collects every answer (raising the first error)."""
        if self.is_closed:
            raise RuntimeError("ParallelEnv is closed; call start() (or reset()) to restart it")
        conns = self.__dict__["_conns"]
        for i, msg in msgs.items():
            try:
                conns[i].send_bytes(msg)
            except (BrokenPipeError, OSError):
                self._fail(i, what)
        errors, out = [], []
        for i in msgs:
            try:
                out.append(self._wait(i, what))
            except RuntimeError as err:
                if self.is_closed:
                    raise
                errors.append(err)  # the answers of the other workers are still read
            except KeyboardInterrupt:
                self._shutdown(force=True)  # a hung worker would never answer a polite close
                self.close(raise_if_closed=False)
                raise
        if errors:
            raise errors[0]
        return out

    # ------------------------------------------------------------------ data out of the buffers
    def _read(self, buffers: dict, keys: list) -> TensorDictBase:
        if self._layout.flat:
            return fast_td({k: buffers[k].clone() for k in keys}, self.batch_size, self.device)
        out = TensorDict({}, self.batch_size, device=self.device)
        for k in keys:
            out.set(k, buffers[k].clone())
        return out

    def _write_actions(self, tensordict: TensorDictBase) -> None:
        for key, buffer in self.__dict__["_buf_actions"].items():
            buffer.copy_(tensordict.get(key))

    # ------------------------------------------------------------------ commands
    def _seed_worker(self, index: int, seed: int | None, static_seed: bool) -> int | None:
        (payload,) = self._command([index], b"S" + pickle.dumps((seed, static_seed)), "set_seed")
        return pickle.loads(payload)

    def _reset_workers(self, workers: list[int], masks: list | None, kwargs: dict) -> TensorDictBase:
        msgs = {i: b"R" + pickle.dumps({"mask": None if masks is None else masks[i], "kwargs": kwargs})
                for i in workers}
        self._command_each(msgs, "reset")
        return self._read(self.__dict__["_buf_root"], self._layout.root_keys)

    def _rollout_workers(self, max_steps: int, seeds: list[int]) -> list[TensorDictBase]:
        msgs = {i: b"T" + pickle.dumps((max_steps, seed)) for i, seed in enumerate(seeds)}
        return [pickle.loads(payload) for payload in self._command_each(msgs, "rollout")]

    def _step_workers(self, tensordict: TensorDictBase, workers: list[int]) -> TensorDictBase:
        self._write_actions(tensordict)
        self._command(workers, b"s", "step")
        return self._read(self.__dict__["_buf_next"], self._layout.next_keys)

    def _step_and_maybe_reset_workers(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        self._write_actions(tensordict)
        self._command(range(self.num_workers), b"r", "step_and_maybe_reset")
        layout = self._layout
        return (self._read(self.__dict__["_buf_next"], layout.next_keys),
                self._read(self.__dict__["_buf_root"], layout.root_keys))
