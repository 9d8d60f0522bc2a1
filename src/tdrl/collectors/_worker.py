"""The multi-process collector worker: runs a :class:`~tdrl.collectors.Collector` and serves commands.

Protocol (parent -> worker, one ``send_bytes`` message, the first byte is the command):

* ``b"c"`` collect one batch into the worker's shared buffer, answer ``b"b"``;
* ``b"W" + payload`` weights from a weight-sync scheme (applied before the next batch, no answer);
* ``b"w"`` copy the shared weights into the policy (a policy on another device; no answer);
* ``b"S" + pickle((seed, static_seed))`` seed, ``b"D"`` state_dict, ``b"L" + pickle(state)`` load it,
  ``b"q"`` quit: each answered ``b"k"`` (plus a pickled payload).

A command that raises is answered ``b"e" + pickle(traceback text)``. At start-up the worker collects one
step to learn the batch layout, allocates its shared buffer ``[*env_batch, T]`` once, and sends it (plus its
policy's weights, moved to shared memory) to the parent: only single bytes cross the pipe per batch.
"""

from __future__ import annotations

import os
import pickle
import signal
import traceback
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl._utils.processes import watch_parent
from tdrl.collectors._single import Collector
from tdrl.envs.batched import CloudpickleWrapper, recv_command
from tdrl.weight_update import WeightSyncScheme
from tdrl.weight_update.weights import copy_weights_, same_storage, to_weights

__all__ = ["WorkerSpec", "worker_main"]

_TRAJ_KEY = ("collector", "traj_ids")


class WorkerSpec:
    """What a worker needs to build its collector (pickled with cloudpickle under ``spawn``).

    Args:
        make_env: the env constructor (or env instance) of this worker.
        policy: the policy (a shared-memory copy of the parent's), or ``None``.
        policy_factory: builds the policy inside the worker (instead of ``policy``).
        collector_kwargs: keyword arguments of the worker's ``Collector``.
    """

    def __init__(
        self,
        make_env: Any,
        policy: Any,
        policy_factory: Callable[[], Any] | None,
        collector_kwargs: dict[str, Any],
    ) -> None:
        self.make_env = make_env
        self.policy = policy
        self.policy_factory = policy_factory
        self.collector_kwargs = collector_kwargs

    def build(self) -> tuple[Collector, Any]:
        """The worker's collector and its (unwrapped) policy."""
        policy = self.policy_factory() if self.policy_factory is not None else self.policy
        collector = Collector(self.make_env, policy, **self.collector_kwargs)
        return collector, policy


def _error(conn: Any) -> None:
    try:
        conn.send_bytes(b"e" + pickle.dumps(traceback.format_exc()))
    except (OSError, ValueError):
        pass


def _layout_buffer(collector: Collector) -> TensorDictBase:
    """A shared ``[*env_batch, T]`` buffer shaped like the collector's batches (from a one-step probe)."""
    probe = collector.probe_batch()
    full = (*probe.batch_size[:-1], collector.frames_per_batch)
    return probe.detach().expand(*full).clone().share_memory_()


def _same_devices(a: TensorDictBase, b: TensorDictBase) -> bool:
    devices_b = dict(b.items(True, True))
    return all(key in devices_b and devices_b[key].device == value.device for key, value in a.items(True, True))


def _expose_weights(policy: Any, shared: TensorDictBase | None) -> tuple[TensorDictBase | None, bool]:
    """The weights the parent writes into, and whether the worker must copy them into its policy."""
    if not isinstance(policy, torch.nn.Module):
        return None, False
    local = to_weights(policy)
    if local.is_empty():
        return None, False
    if shared is not None:
        if not same_storage(local, shared) and _same_devices(local, shared):
            # spawn (or a policy rebuilt by pickling): read the parent's shared tensors directly, as after fork
            shared.to_module(policy)
        return None, not same_storage(to_weights(policy), shared)
    if all(t.device.type == "cpu" for t in local.values(True, True)):
        local.share_memory_()  # in place: the policy now reads shared memory the parent can write
    return local, False


def worker_main(
    conn: Any,
    spec: Any,
    idx: int,
    num_workers: int,
    parent_pid: int,
    shared_weights: TensorDictBase | None,
    schemes: dict[str, WeightSyncScheme],
    stop: torch.Tensor,
    num_threads: int,
    death_signal: bool = True,
) -> None:
    """Entry point of a collector worker process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops us
    watch_parent(parent_pid, use_death_signal=death_signal)  # exit with the parent, even mid-batch
    torch.set_num_threads(num_threads)
    if isinstance(spec, CloudpickleWrapper):
        spec = spec.fn
    try:
        collector, policy = spec.build()
        buffer = _layout_buffer(collector)
        exposed, needs_copy = _expose_weights(policy, shared_weights)
        for model_id, scheme in schemes.items():
            scheme.init_on_receiver(model_id, model=policy, worker_idx=idx)
        conn.send(("k", buffer, None if exposed is None else exposed.detach()))
    except Exception:  # noqa: BLE001 - reported to the parent, which raises
        conn.send(("e", traceback.format_exc()))
        return
    flag = stop.numpy()
    try:
        _serve(conn, collector, policy, buffer, idx, num_workers, parent_pid, shared_weights, needs_copy,
               schemes, lambda: bool(flag[0]))
    finally:
        collector.shutdown()


def _fill(buffer: TensorDictBase, batch: TensorDictBase, idx: int, num_workers: int) -> None:
    """Writes ``batch`` into ``buffer`` with traj ids made unique across workers (``id * n + idx``)."""
    ids = batch.get(_TRAJ_KEY)
    batch.set(_TRAJ_KEY, ids * num_workers + idx)
    steps = batch.shape[-1]
    if steps == buffer.shape[-1]:
        buffer.update_(batch)
    else:  # preempted: the rest of the buffer is marked invalid
        buffer[..., :steps].update_(batch)
        buffer.get(_TRAJ_KEY)[..., steps:] = -1


def _serve(conn: Any, collector: Collector, policy: Any, buffer: TensorDictBase, idx: int, num_workers: int,
           parent_pid: int, shared: TensorDictBase | None, needs_copy: bool,
           schemes: dict[str, WeightSyncScheme], interrupt: Callable[[], bool]) -> None:
    send = conn.send_bytes
    while True:
        msg = recv_command(conn, parent_pid)
        if msg is None:
            return
        op = msg[:1]
        try:
            if op == b"c":
                batch = collector.next_batch(interrupt=interrupt)
                _fill(buffer, batch, idx, num_workers)
                send(b"b")
            elif op == b"W":
                model_id, payload = pickle.loads(msg[1:])
                schemes[model_id].receive(payload)
            elif op == b"w":
                if needs_copy and shared is not None:
                    copy_weights_(to_weights(policy), shared)
            elif op == b"S":
                seed, static_seed = pickle.loads(msg[1:])
                torch.manual_seed(seed)
                send(b"k" + pickle.dumps(collector.set_seed(seed, static_seed=static_seed)))
            elif op == b"D":
                send(b"k" + pickle.dumps(collector.state_dict()))
            elif op == b"L":
                collector.load_state_dict(pickle.loads(msg[1:]))
                send(b"k")
            elif op == b"q":
                send(b"k")
                return
            else:
                raise ValueError(f"collector worker {idx}: unknown command {op!r}")
        except Exception:  # noqa: BLE001 - reported to the parent, which raises
            _error(conn)
        if os.getppid() != parent_pid:
            return
