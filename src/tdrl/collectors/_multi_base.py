"""``MultiCollector``: the process management shared by ``MultiSyncCollector`` and ``MultiAsyncCollector``.

Each worker process runs a :class:`~tdrl.collectors.Collector` and writes every batch into a shared-memory
buffer allocated once at start-up; one byte goes each way per batch. The parent waits on each worker's pipe
*and* its process sentinel, so a worker that raises (its traceback is forwarded) or dies (killed, OOM) makes
the parent stop every worker and raise within a second; a worker that does not deliver within
``worker_timeout`` seconds (a hung env) is killed and reported with its pid and the call it was in. Workers
ignore SIGINT: a Ctrl-C while the parent waits stops them (killing a hung one after a second), and they exit
on their own when the parent dies, even in the middle of a batch (:func:`~tdrl._utils.processes.watch_parent`).
They are also stopped at interpreter exit.

Policy weights: a plain ``policy`` is moved to shared memory before the workers start, so the workers read
the parent's parameters; a policy built by ``policy_factory`` moves its weights to shared memory in its
worker and hands them to the parent. ``update_policy_weights_`` writes into these tensors (or goes through a
``weight_updater`` / ``weight_sync_schemes`` when given).
"""

from __future__ import annotations

import abc
import atexit
import functools
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import pickle
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl._utils.processes import (
    DEFAULT_WORKER_TIMEOUT,
    check_worker_timeout,
    default_start_method,
    kill_hung_worker,
)
from tdrl.collectors._base import BaseCollector
from tdrl.collectors._worker import WorkerSpec, worker_main
from tdrl.collectors.utils import split_trajectories
from tdrl.envs import EnvBase, ExplorationType
from tdrl.envs.batched import CloudpickleWrapper
from tdrl.weight_update import (
    MultiProcessedWeightUpdater,
    SharedMemWeightSyncScheme,
    WeightSyncScheme,
    WeightUpdaterBase,
)
from tdrl.weight_update.weights import to_weights

__all__ = ["MultiCollector"]

_POLL_S = 0.5
_INTERRUPT_GRACE_S = 1.0  # after Ctrl-C, healthy workers get this long to stop before they are killed
_LIVE: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _shutdown_all() -> None:
    for collector in list(_LIVE):
        try:
            collector.shutdown()
        except Exception:  # noqa: BLE001 - interpreter exit: best effort
            pass


def _stop_on_interrupt(method: Callable) -> Callable:
    """A Ctrl-C while the parent waits on its workers stops them at once (a hung one would never answer)."""

    @functools.wraps(method)
    def wrapper(self: MultiCollector, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except KeyboardInterrupt:
            self.shutdown(timeout=_INTERRUPT_GRACE_S)
            raise

    return wrapper


def _per_worker(value: Any, i: int, n: int, name: str) -> Any:
    """``value[i]`` for a per-worker list, else ``value``."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} has {len(value)} entries, expected one per worker ({n})")
        return value[i]
    return value


def _env_fns(create_env_fn: Any, num_workers: int | None) -> list[Any]:
    if isinstance(create_env_fn, (list, tuple)):
        if num_workers is not None and num_workers != len(create_env_fn):
            raise ValueError(
                f"num_workers={num_workers} but create_env_fn lists {len(create_env_fn)} env constructors"
            )
        fns = list(create_env_fn)
    else:
        if num_workers is None:
            raise TypeError("create_env_fn is a single constructor: pass num_workers, or a list of constructors")
        fns = [create_env_fn] * num_workers
    if not fns:
        raise ValueError("create_env_fn is empty: a multi-process collector needs at least one worker")
    for fn in fns:
        if not (isinstance(fn, EnvBase) or callable(fn)):
            raise TypeError(f"create_env_fn entries must be env constructors (callables), got {type(fn).__name__}")
    return fns


def _check_args(policy: Any, policy_factory: Any, collector_class: Any, frames_per_batch: Any,
                preemptive_threshold: float | None, schemes: Mapping[str, Any] | None) -> None:
    """Refuses contradictory or out-of-range constructor arguments before any worker starts."""
    if policy is not None and policy_factory is not None:
        raise TypeError("pass either policy or policy_factory, not both")
    if collector_class not in (None, "single_process") and collector_class.__name__ != "Collector":
        raise TypeError(f"collector_class must be None or Collector, got {collector_class!r}")
    if not isinstance(frames_per_batch, int) or frames_per_batch <= 0:
        raise ValueError(f"frames_per_batch must be a positive int, got {frames_per_batch!r}")
    if preemptive_threshold is not None and not 0.0 < preemptive_threshold <= 1.0:
        raise ValueError(f"preemptive_threshold must be in (0, 1], got {preemptive_threshold}")
    for key in schemes or {}:
        if key != "policy":
            raise KeyError(f"weight_sync_schemes: unknown model id {key!r}; the collector syncs 'policy'")


class MultiCollector(BaseCollector):
    """Base class of the multi-process collectors (see ``MultiSyncCollector`` and ``MultiAsyncCollector``).

    Args:
        create_env_fn: a list of env constructors (one per worker), or one constructor with ``num_workers``.
        policy: the policy (its weights are moved to shared memory and read by every worker).

    Keyword Args:
        num_workers: the number of workers when ``create_env_fn`` is a single constructor.
        policy_factory: builds the policy in each worker (one callable, or one per worker), so unpicklable
            or device-bound policies work.
        frames_per_batch: frames per yielded batch.
        total_frames: frames to collect before stopping (``-1``: forever).
        device / storing_device / env_device / policy_device: as for ``Collector`` (or one per worker).
        create_env_kwargs: keyword arguments of the env constructors (a dict, or one per worker).
        max_frames_per_traj / init_random_frames / reset_at_each_iter: as for ``Collector``, applied in
            each worker; so are ``exploration_type``, ``reset_when_done``, ``set_truncated``,
            ``trust_policy`` and ``compile_policy``.
        postproc: applied in the parent to each yielded batch.
        split_trajs: split each yielded batch into padded trajectories.
        preemptive_threshold: (sync) once this fraction of workers is done, the others stop early; their
            missing steps have traj id ``-1`` and a ``("collector", "mask")`` entry marks the real ones.
        num_threads: torch threads of the parent process (default: what the workers leave free).
        num_sub_threads: torch threads of each worker.
        cat_results: (sync) ``"stack"`` (``[num_workers, T]``, default) or a dim to concatenate along.
        replay_buffer: extend this buffer with each batch and yield ``None``.
        weight_updater: a ``WeightUpdaterBase`` (or a callable building one) used by ``update_policy_weights_``.
        weight_sync_schemes: ``{"policy": scheme}``: how ``update_policy_weights_`` reaches the workers.
        mp_start_method: ``"fork"`` (default where available and CUDA is not initialised in this process,
            else ``"spawn"``), ``"spawn"`` or ``"forkserver"``.
        shutdown_timeout: seconds to wait for a worker to exit before killing it.
        worker_timeout: seconds to wait for one answer of a worker (a batch, a seed, a state dict, its
            start-up) before killing it and raising :class:`~tdrl._utils.processes.WorkerTimeoutError`;
            ``None`` waits forever. Default: 300 s. A batch waiting in the pipe is never late: only a worker
            that has not delivered counts.
        track_policy_version: count the calls to ``update_policy_weights_`` and write into each batch
            (``"policy_version"``, int64 per frame) the count when its worker was asked for it. With weights in
            shared memory, frames collected after an update that lands mid-batch already use the new weights
            (TorchRL's per-worker tags straddle such a batch the same way).
        no_cuda_sync / cudagraph_policy: TorchRL's CUDA options, accepted with no effect (CPU workers).
    """

    def __init__(
        self,
        create_env_fn: Sequence[Callable[[], EnvBase]] | Callable[[], EnvBase],
        policy: Any = None,
        *,
        num_workers: int | None = None,
        policy_factory: Callable[[], Any] | Sequence[Callable[[], Any]] | None = None,
        frames_per_batch: int,
        total_frames: int | None = -1,
        device: Any = None,
        storing_device: Any = None,
        env_device: Any = None,
        policy_device: Any = None,
        create_env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        collector_class: Any = None,
        max_frames_per_traj: int | None = None,
        init_random_frames: int | None = None,
        reset_at_each_iter: bool = False,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        split_trajs: bool | None = None,
        exploration_type: ExplorationType = ExplorationType.RANDOM,
        reset_when_done: bool = True,
        update_at_each_batch: bool = False,
        preemptive_threshold: float | None = None,
        num_threads: int | None = None,
        num_sub_threads: int = 1,
        cat_results: str | int | None = None,
        set_truncated: bool = False,
        use_buffers: bool | None = None,
        replay_buffer: Any = None,
        extend_buffer: bool = True,
        trust_policy: bool | None = None,
        compile_policy: bool | Mapping[str, Any] | None = None,
        weight_updater: WeightUpdaterBase | Callable[[], WeightUpdaterBase] | None = None,
        weight_sync_schemes: Mapping[str, WeightSyncScheme] | None = None,
        mp_start_method: str | None = None,
        shutdown_timeout: float = 5.0,
        worker_timeout: float | None = DEFAULT_WORKER_TIMEOUT,
        track_policy_version: bool = False,
        no_cuda_sync: bool = False,
        cudagraph_policy: bool | Mapping[str, Any] = False,
    ) -> None:
        self._closed = True  # until the workers are up (shutdown() is then a no-op)
        fns = _env_fns(create_env_fn, num_workers)
        n = len(fns)
        self.num_workers = n
        self._setup_policy_version(track_policy_version)
        self._request_version = [0] * n
        self.no_cuda_sync = no_cuda_sync
        self.cudagraph_policy = cudagraph_policy
        _check_args(policy, policy_factory, collector_class, frames_per_batch, preemptive_threshold,
                    weight_sync_schemes)
        self.schemes = dict(weight_sync_schemes or {})
        self.policy = policy
        self.policy_factory = policy_factory
        self.postproc = postproc
        self.split_trajs = bool(split_trajs)
        self.replay_buffer = replay_buffer
        self.extend_buffer = extend_buffer
        self.update_at_each_batch = update_at_each_batch
        self.preemptive_threshold = preemptive_threshold
        self.cat_results = "stack" if cat_results is None else cat_results
        self.shutdown_timeout = shutdown_timeout
        self.worker_timeout = check_worker_timeout(worker_timeout, type(self).__name__)
        self.requested_frames_per_batch = frames_per_batch
        self.frames_per_batch = frames_per_batch
        self.total_frames = -1 if total_frames is None or total_frames < 0 else int(total_frames)
        self._frames = 0
        self._iter = 0
        worker_frames = self._worker_frames(frames_per_batch)
        init = -(-(init_random_frames or 0) // n)
        common = dict(
            frames_per_batch=worker_frames, total_frames=-1, max_frames_per_traj=max_frames_per_traj,
            init_random_frames=init, reset_at_each_iter=reset_at_each_iter, exploration_type=exploration_type,
            reset_when_done=reset_when_done, set_truncated=set_truncated, trust_policy=trust_policy,
            compile_policy=compile_policy,
        )
        share_parent = not self.schemes or isinstance(self.schemes.get("policy"), SharedMemWeightSyncScheme)
        self._shared_weights = self._share_policy_weights(policy) if share_parent else None
        specs = []
        for i, fn in enumerate(fns):
            kwargs = dict(common)
            for name, value in (("device", device), ("storing_device", storing_device), ("env_device", env_device),
                                ("policy_device", policy_device), ("create_env_kwargs", create_env_kwargs)):
                kwargs[name] = _per_worker(value, i, n, name)
            factory = _per_worker(policy_factory, i, n, "policy_factory")
            specs.append(WorkerSpec(fn, policy, factory, kwargs))
        self._start(specs, mp_start_method, num_threads, num_sub_threads)
        self._setup_weights(weight_updater)

    # ------------------------------------------------------------------ start / stop
    @abc.abstractmethod
    def _worker_frames(self, frames_per_batch: int) -> int:
        """Frames each worker collects per batch."""

    @staticmethod
    def _share_policy_weights(policy: Any) -> TensorDictBase | None:
        if not isinstance(policy, torch.nn.Module):
            return None
        weights = to_weights(policy)
        if weights.is_empty():
            return None
        if all(t.device.type == "cpu" for t in weights.values(True, True)):
            weights.share_memory_()  # in place: the parent's policy and the workers' share these tensors
        return weights

    def _start(self, specs: list[WorkerSpec], method: str | None, num_threads: int | None,
               num_sub_threads: int) -> None:
        if method is None:
            method = default_start_method()
        ctx = mp.get_context(method)
        fork = method == "fork"
        self._stop = torch.zeros(1, dtype=torch.uint8).share_memory_()
        self._stop_np = self._stop.numpy()
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        self._requested_at = [0.0] * self.num_workers
        # Linux's parent-death signal follows the starting *thread*: only arm it from the main thread.
        death_signal = threading.current_thread() is threading.main_thread()
        for i, spec in enumerate(specs):
            parent_conn, child_conn = ctx.Pipe()
            proc = ctx.Process(
                target=worker_main,
                args=(child_conn, spec if fork else CloudpickleWrapper(spec), i, self.num_workers, os.getpid(),
                      self._shared_weights, self.schemes, self._stop, num_sub_threads, death_signal),
                daemon=False,  # workers may start their own processes (a ParallelEnv)
                name=f"tdrl-collector-{i}",
            )
            proc.start()
            child_conn.close()
            self._conns.append(parent_conn)
            self._procs.append(proc)
        self._closed = False
        _LIVE.add(self)
        if num_threads is None:
            num_threads = max(1, (os.cpu_count() or 1) - self.num_workers)
        torch.set_num_threads(num_threads)
        self._ready = [False] * self.num_workers
        self._busy = [False] * self.num_workers
        self.buffers: list[TensorDictBase] = []
        self._worker_weights: list[TensorDictBase | None] = []
        for i in range(self.num_workers):
            buffer, weights = self._recv_obj(i, "start-up")
            self.buffers.append(buffer)
            self._worker_weights.append(weights)

    def shutdown(self, timeout: float | None = None) -> None:
        """Stops the workers (killing those that do not exit in time) and releases the shared buffers."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        _LIVE.discard(self)
        self._stop_np[0] = 1  # an in-flight batch ends at its next step
        for conn, proc in zip(self._conns, self._procs):
            if proc.is_alive():
                try:
                    conn.send_bytes(b"q")
                except (OSError, ValueError):
                    pass
        wait = self.shutdown_timeout if timeout is None else timeout
        deadline = time.monotonic() + wait  # one grace period for all workers, not one each
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(5.0)
        for conn in self._conns:
            conn.close()
        for scheme in self.schemes.values():
            scheme.shutdown()
        self.buffers = []
        self._worker_weights = []
        self._shared_weights = None

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers."""
        return [p.pid for p in self._procs]

    # ------------------------------------------------------------------ messaging
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} was shut down")

    def _fail(self, i: int, what: str, traceback_text: str | None = None) -> None:
        proc = self._procs[i]
        if traceback_text is None:
            proc.join(1.0)
            msg = f"worker {i} (pid {proc.pid}) died during {what} (exit code {proc.exitcode})"
        else:
            msg = f"worker {i} (pid {proc.pid}) raised during {what}:\n{traceback_text}"
        self.shutdown(timeout=1.0)
        raise RuntimeError(f"{type(self).__name__}: {msg}; all workers were stopped")

    def _timed_out(self, i: int, what: str) -> None:
        err = kill_hung_worker(type(self).__name__, i, self._procs[i], what, self.worker_timeout)
        self.shutdown(timeout=1.0)
        err.args = (f"{err}; all workers were stopped",)
        raise err

    def _check_deadline(self, i: int, started: float, what: str) -> None:
        if self.worker_timeout is not None and time.monotonic() - started >= self.worker_timeout:
            self._timed_out(i, what)

    def _check_busy_deadlines(self) -> None:
        """Times out a busy worker even while the others keep the parent fed (the async collectors)."""
        if self.worker_timeout is None:
            return
        for i in range(self.num_workers):
            if self._busy[i] and not self._conns[i].poll(0):
                self._check_deadline(i, self._requested_at[i], "collection")

    @_stop_on_interrupt
    def _recv_raw(self, i: int, what: str) -> bytes:
        """Worker ``i``'s next message; raises if it reported an error, died or timed out."""
        conn, proc = self._conns[i], self._procs[i]
        started = time.monotonic()
        while not conn.poll(0):
            mpc.wait([conn, proc.sentinel], _POLL_S)
            if not conn.poll(0):
                if not proc.is_alive():
                    self._fail(i, what)
                self._check_deadline(i, started, what)
        try:
            msg = conn.recv_bytes()
        except (EOFError, OSError):
            self._fail(i, what)
        if msg[:1] == b"e":
            self._fail(i, what, pickle.loads(msg[1:]))
        return msg

    @_stop_on_interrupt
    def _recv_obj(self, i: int, what: str) -> Any:
        conn, proc = self._conns[i], self._procs[i]
        started = time.monotonic()
        while not conn.poll(_POLL_S):
            if not proc.is_alive() and not conn.poll(0):
                self._fail(i, what)
            self._check_deadline(i, started, what)
        try:
            status, *payload = conn.recv()
        except (EOFError, OSError):
            self._fail(i, what)
        if status == "e":
            self._fail(i, what, payload[0])
        return payload

    def _send(self, i: int, msg: bytes, what: str) -> None:
        try:
            self._conns[i].send_bytes(msg)
        except (BrokenPipeError, OSError):
            self._fail(i, what)

    @_stop_on_interrupt
    def _wait_batch(self, workers: set[int], what: str) -> int:
        """Waits until one of ``workers`` delivers a batch; returns its index."""
        while True:
            for i in workers:
                if self._conns[i].poll(0):
                    msg = self._recv_raw(i, what)
                    if msg[:1] != b"b":
                        raise RuntimeError(f"worker {i}: unexpected answer {msg[:1]!r} during {what}")
                    self._busy[i] = False
                    return i
            objs = [self._conns[i] for i in workers] + [self._procs[i].sentinel for i in workers]
            mpc.wait(objs, _POLL_S)
            for i in workers:
                if not self._conns[i].poll(0):
                    if not self._procs[i].is_alive():
                        self._fail(i, what)
                    self._check_deadline(i, self._requested_at[i], what)

    def _request(self, i: int) -> None:
        self._send(i, b"c", "collection")
        self._requested_at[i] = time.monotonic()
        self._request_version[i] = self._policy_version or 0
        self._busy[i] = True
        self._ready[i] = False

    def _quiesce(self) -> None:
        """Waits for in-flight batches (kept, marked ready) so workers can answer commands."""
        busy = {i for i in range(self.num_workers) if self._busy[i]}
        while busy:
            i = self._wait_batch(busy, "collection")
            busy.discard(i)
            self._ready[i] = True

    def _call(self, i: int, msg: bytes, what: str) -> Any:
        self._send(i, msg, what)
        payload = self._recv_raw(i, what)[1:]
        return pickle.loads(payload) if payload else None

    # ------------------------------------------------------------------ output
    def _finish(self, batch: TensorDictBase) -> TensorDictBase | None:
        """split_trajs, postproc and replay-buffer feeding, in the parent."""
        self._iter += 1
        if self.split_trajs:
            batch = split_trajectories(batch, prefix="collector")
        if self.postproc is not None:
            batch = self.postproc(batch)
        if self.replay_buffer is not None:
            self._extend(batch)
            return None
        return batch

    def _extend(self, batch: TensorDictBase) -> None:
        self.replay_buffer.extend(batch)

    def iterator(self) -> Iterator[TensorDictBase | None]:
        self._check_open()
        while self.total_frames < 0 or self._frames < self.total_frames:
            self._check_open()
            if self.update_at_each_batch and (self.policy is not None or self.schemes or self._custom_updater):
                self.update_policy_weights_()
            yield self._next_batch()

    @abc.abstractmethod
    def _next_batch(self) -> TensorDictBase | None:
        """Collects, counts and returns the next batch."""

    # ------------------------------------------------------------------ weights
    def _setup_weights(self, weight_updater: Any) -> None:
        if weight_updater is not None and not isinstance(weight_updater, WeightUpdaterBase):
            weight_updater = weight_updater() if callable(weight_updater) else weight_updater
            if not isinstance(weight_updater, WeightUpdaterBase):
                raise TypeError(f"weight_updater must be a WeightUpdaterBase, got {type(weight_updater).__name__}")
        for model_id, scheme in self.schemes.items():
            senders = [self._scheme_sender(i, model_id) for i in range(self.num_workers)]
            shared = [self._shared_weights or w for w in self._worker_weights]
            scheme.init_on_sender(model_id, model=self.policy, senders=senders, worker_weights=shared)
        self._custom_updater = weight_updater is not None
        if weight_updater is None and not self.schemes:
            targets = {i: w for i, w in enumerate(self._worker_weights) if w is not None}
            if self._shared_weights is not None:
                targets = {"shared": self._shared_weights}
            getter = (lambda: to_weights(self.policy)) if self._shared_weights is not None else None
            weight_updater = MultiProcessedWeightUpdater(get_server_weights=getter, policy_weights=targets)
            weight_updater.register_post_hook(self._notify_copies)
        if weight_updater is not None:
            weight_updater.register_collector(self)
        self.weight_updater = weight_updater

    def _scheme_sender(self, i: int, model_id: str) -> Callable[[bytes], None]:
        def send(payload: bytes) -> None:
            self._check_open()
            self._send(i, b"W" + pickle.dumps((model_id, payload)), "weight update")
        return send

    def _notify_copies(self) -> None:
        # Workers whose policy lives on another device than the shared weights copy them in.
        for i in range(self.num_workers):
            self._send(i, b"w", "weight update")

    def update_policy_weights_(
        self, policy_or_weights: Any = None, *, worker_ids: int | Sequence[int] | None = None,
        model_id: str = "policy", **kwargs: Any,
    ) -> None:
        """Sends new policy weights to the workers (all of them, or ``worker_ids``).

        Args:
            policy_or_weights: a module, a TensorDict of weights or a state_dict. ``None`` pushes the parent
                policy's current weights (the workers already read them when they live in shared memory).
            worker_ids: the workers to update (all when ``None``).
            model_id: the model to update (``"policy"``).
            **kwargs: accepted for TorchRL compatibility (its weight-sync options), unused.
        """
        self._check_open()
        self._push_weights(policy_or_weights, worker_ids, model_id)
        if model_id == "policy":
            self.increment_version()

    def _push_weights(self, policy_or_weights: Any, worker_ids: Any, model_id: str) -> None:
        if model_id in self.schemes:
            self.schemes[model_id].send(policy_or_weights, worker_ids=worker_ids)
            return
        if model_id != "policy":
            raise KeyError(f"update_policy_weights_: unknown model_id {model_id!r}; the collector syncs 'policy'")
        if self.weight_updater is None:
            return
        if policy_or_weights is None and self.policy is None and self.policy_factory is not None:
            raise ValueError(
                "the workers' policies were built by policy_factory: pass the new weights "
                "(update_policy_weights_(policy_or_weights)) or a weight_sync_schemes entry"
            )
        updater = self.weight_updater
        if isinstance(updater, MultiProcessedWeightUpdater) and not updater.policy_weights:
            if policy_or_weights is not None:
                raise TypeError("the workers' policy has no weights to update")
            return
        ids = worker_ids
        if self._shared_weights is not None and ids is not None:
            ids = None  # one shared copy serves every worker
        self.weight_updater.push_weights(policy_or_weights, ids)

    def get_policy_weights(self) -> TensorDictBase | None:
        """The shared weights the workers read (``None`` when each worker holds its own)."""
        return self._shared_weights

    # ------------------------------------------------------------------ seeds and state
    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds every worker (env and torch RNG) in turn; returns the next seed of the chain."""
        self._check_open()
        self._quiesce()
        self._ready = [False] * self.num_workers
        for i in range(self.num_workers):
            out = self._call(i, b"S" + pickle.dumps((seed, static_seed)), "set_seed")
            seed = out if out is not None else seed + 1
        return seed

    def state_dict(self) -> dict[str, Any]:
        self._check_open()
        self._quiesce()
        state: dict[str, Any] = {"frames": self._frames, "iter": self._iter}
        if self._policy_version is not None:
            state["policy_version"] = self._policy_version
        for i in range(self.num_workers):
            state[f"worker{i}"] = self._call(i, b"D", "state_dict")
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self._check_open()
        self._quiesce()
        self._ready = [False] * self.num_workers
        self._frames = int(state_dict.get("frames", 0))
        self._iter = int(state_dict.get("iter", 0))
        if self._policy_version is not None and "policy_version" in state_dict:
            self._policy_version = int(state_dict["policy_version"])
        for i in range(self.num_workers):
            if f"worker{i}" in state_dict:
                self._call(i, b"L" + pickle.dumps(state_dict[f"worker{i}"]), "load_state_dict")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_workers={self.num_workers}, frames_per_batch={self.frames_per_batch}, "
            f"total_frames={self.total_frames}, frames={self._frames})"
        )
