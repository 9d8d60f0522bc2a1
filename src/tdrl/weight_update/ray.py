"""Weights to Ray actors (the ``distributed`` extra): ``RayWeightUpdater`` and ``RayWeightSyncScheme``.

Both put the weights in Ray's object store once per update (``ray.put``) and hand every actor the same
reference; actors on the sender's node read it from shared memory, others fetch it once per node. An actor
applies the weights with its ``update_policy_weights_`` method, so any actor exposing that method (a
:class:`~tdrl.collectors.distributed.RayCollector` actor, a custom one) can receive them. Ray runs the tasks
an actor receives from one caller in order, so a batch requested after a weight update is always collected
with the new weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from tensordict import TensorDictBase

from tdrl._utils.optional_ray import RayLease
from tdrl.weight_update._schemes import WeightSyncScheme
from tdrl.weight_update._updaters import WeightUpdaterBase
from tdrl.weight_update.weights import to_weights

__all__ = ["RayTransport", "RayWeightSyncScheme", "RayWeightUpdater"]


def put_weights(weights: Any) -> Any:
    """An object-store reference to a CPU copy of ``weights`` (a reference is passed through)."""
    ray = RayLease.module()
    if isinstance(weights, ray.ObjectRef):
        return weights
    if isinstance(weights, TensorDictBase):
        return ray.put(weights.detach().cpu().clone())
    if isinstance(weights, dict):
        return ray.put({k: v.detach().cpu().clone() for k, v in weights.items()})
    return ray.put(to_weights(weights).detach().cpu().clone())


class RayTransport:
    """Delivers weights to one Ray actor (it calls the actor's ``update_policy_weights_``).

    Args:
        remote_actor: the actor handle.
        timeout: seconds :meth:`wait_ack` waits before ``TimeoutError`` (``None``: no limit).

    Examples:
        >>> RayTransport.__name__  # needs a running Ray: see docs/distributed.md
        'RayTransport'
    """

    def __init__(self, remote_actor: Any, *, timeout: float | None = 120.0) -> None:
        self.remote_actor = remote_actor
        self.timeout = timeout
        self._pending: list[Any] = []

    def send_weights_async(self, weights: Any) -> None:
        """Starts the update (``weights``: a TensorDict, state_dict or object-store reference)."""
        self._pending.append(self.remote_actor.update_policy_weights_.remote(put_weights(weights)))

    def wait_ack(self) -> None:
        """Waits until the actor applied every update sent so far (raises its error if one failed)."""
        ray = RayLease.module()
        pending, self._pending = self._pending, []
        if not pending:
            return
        try:
            ray.get(pending, timeout=self.timeout)
        except ray.exceptions.GetTimeoutError as err:
            raise TimeoutError(f"a Ray actor did not apply new weights within {self.timeout}s") from err

    def send_weights(self, weights: Any) -> None:
        """Sends ``weights`` and waits until the actor applied them."""
        self.send_weights_async(weights)
        self.wait_ack()


class RayWeightSyncScheme(WeightSyncScheme):
    """Sends weights to Ray actors through the object store (one ``ray.put`` per update, shared by all).

    Args:
        strategy: ``"tensordict"`` or ``"state_dict"`` (the format sent).
        backend: accepted for TorchRL compatibility; TorchRL builds a ``torch.distributed`` group over the
            actors, tdrl uses Ray's object store, which needs no rendezvous and survives actor restarts
            (docs/differences.md).
        sync: wait until every actor applied the weights before :meth:`send` returns.
        timeout: seconds to wait for the actors (``None``: no limit).

    Examples:
        >>> scheme = RayWeightSyncScheme()
        >>> scheme.initialized_on_sender  # the collector calls init_on_sender(remote_collectors=actors)
        False
    """

    def __init__(
        self,
        strategy: Literal["tensordict", "state_dict"] = "tensordict",
        backend: str = "gloo",
        *,
        sync: bool = True,
        timeout: float | None = 120.0,
    ) -> None:
        super().__init__(strategy)
        self.backend = backend
        self.sync = sync
        self.timeout = timeout
        self._transports: list[RayTransport] = []

    def init_on_sender(  # type: ignore[override]
        self,
        model_id: str = "policy",
        *,
        model: Any = None,
        remote_collectors: Sequence[Any] = (),
        **kwargs: Any,
    ) -> None:
        """Connects the scheme to the actors (called again with the new list when an actor is replaced).

        Args:
            model_id: the model this scheme updates.
            model: the sender's model (what a bare :meth:`send` sends).
            remote_collectors: the Ray actor handles.
            **kwargs: TorchRL's other sender arguments (``context``), unused.
        """
        super().init_on_sender(model_id, model=model)
        self._transports = [RayTransport(actor, timeout=self.timeout) for actor in remote_collectors]

    def prepare_weights(self, weights: Any = None) -> Any:
        """The weights to send in the strategy's format (an object-store reference is sent as it is)."""
        if weights is not None and isinstance(weights, RayLease.module().ObjectRef):
            return weights
        return super().prepare_weights(weights)

    def send(self, weights: Any = None, worker_ids: int | Sequence[int] | None = None) -> None:
        if not self.initialized_on_sender:
            raise RuntimeError("RayWeightSyncScheme.send() called before init_on_sender()")
        ids = range(len(self._transports)) if worker_ids is None else (
            [worker_ids] if isinstance(worker_ids, int) else list(worker_ids)
        )
        self._send(self.prepare_weights(weights), list(ids))

    def _send(self, weights: Any, worker_ids: list[int]) -> None:
        for i in worker_ids:
            if not 0 <= i < len(self._transports):
                raise IndexError(f"RayWeightSyncScheme: worker {i} out of range (0..{len(self._transports) - 1})")
        ref = put_weights(weights)
        for i in worker_ids:
            self._transports[i].send_weights_async(ref)
        if self.sync:
            for i in worker_ids:
                self._transports[i].wait_ack()

    def shutdown(self) -> None:
        super().shutdown()
        self._transports = []

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_transports"] = []
        return state


class RayWeightUpdater(WeightUpdaterBase):
    """Pushes a server policy's weights to remote Ray collectors (TorchRL's older updater API).

    Args:
        policy_weights: the server's weights (``TensorDict.from_module(policy)``), pushed by a bare
            ``push_weights()``.
        remote_collectors: the Ray actor handles (each exposes ``update_policy_weights_``).
        max_interval: a worker named in a push is updated only when more than this many pushes skipped it
            since its last update (0: every push updates it).

    Examples:
        >>> RayWeightUpdater.__name__  # needs a running Ray: see docs/distributed.md
        'RayWeightUpdater'
    """

    def __init__(self, policy_weights: TensorDictBase | None, remote_collectors: list[Any], max_interval: int = 0) -> None:
        self.policy_weights = policy_weights
        self.remote_collectors = remote_collectors
        self.max_interval = max(0, int(max_interval))
        self._batches_since_weight_update = [0] * len(remote_collectors)
        self._pending: list[Any] = []

    def all_worker_ids(self) -> list[Any]:
        return list(range(len(self.remote_collectors)))

    def _get_server_weights(self) -> Any:
        return None if self.policy_weights is None else self.policy_weights.data

    def _maybe_map_weights(self, weights: Any) -> Any:
        return None if weights is None else put_weights(weights)

    def _skip_update(self, worker_id: Any) -> bool:
        while len(self._batches_since_weight_update) < len(self.remote_collectors):
            self._batches_since_weight_update.append(0)
        self._batches_since_weight_update[worker_id] += 1
        return self._batches_since_weight_update[worker_id] <= self.max_interval

    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any = None) -> None:
        actor = self.remote_collectors[worker_id]
        self._pending.append(actor.update_policy_weights_.remote(server_weights))
        self._batches_since_weight_update[worker_id] = 0

    def wait(self, timeout: float | None = 120.0) -> None:
        """Waits until the actors applied every update pushed so far (raises an actor's error)."""
        pending, self._pending = self._pending, []
        if pending:
            RayLease.module().get(pending, timeout=timeout)
