"""Weight-sync schemes (TorchRL 0.14's ``torchrl.weight_update``): how new policy weights reach workers.

A collector owns one scheme per model id (``weight_sync_schemes={"policy": scheme}``). In the parent,
:meth:`WeightSyncScheme.init_on_sender` gives the scheme a way to reach each worker; in each worker,
:meth:`WeightSyncScheme.init_on_receiver` gives it the worker's model. ``collector.update_policy_weights_(w)``
then calls :meth:`WeightSyncScheme.send`.

* :class:`MultiProcessWeightSyncScheme` sends a copy of the weights through each worker's command pipe; the
  worker loads them before its next batch.
* :class:`SharedMemWeightSyncScheme` writes the weights into shared-memory tensors that the workers' models
  read directly: visible at once, nothing is sent.
* :class:`NoWeightSyncScheme` never updates the workers.
"""

from __future__ import annotations

import abc
import pickle
from collections.abc import Callable, Sequence
from typing import Any, Literal

from tensordict import TensorDictBase

from tdrl.weight_update.weights import copy_weights_, same_storage, to_weights

__all__ = [
    "MultiProcessWeightSyncScheme",
    "NoWeightSyncScheme",
    "SharedMemWeightSyncScheme",
    "WeightStrategy",
    "WeightSyncScheme",
]

_STRATEGIES = ("tensordict", "state_dict")


class WeightStrategy:
    """Extracts weights from a model and applies them, as a TensorDict or as a ``state_dict``.

    Args:
        extract_as: ``"tensordict"`` or ``"state_dict"``.

    Examples:
        >>> import torch
        >>> net = torch.nn.Linear(2, 1)
        >>> strategy = WeightStrategy("state_dict")
        >>> sorted(strategy.extract_weights(net))
        ['bias', 'weight']
    """

    def __init__(self, extract_as: Literal["tensordict", "state_dict"] = "tensordict") -> None:
        if extract_as not in _STRATEGIES:
            raise ValueError(f"strategy must be one of {_STRATEGIES}, got {extract_as!r}")
        self.extract_as = extract_as

    def extract_weights(self, source: Any) -> Any:
        """The weights of ``source`` (a module, TensorDict or state_dict) in this strategy's format."""
        weights = to_weights(source)
        if self.extract_as == "state_dict":
            return {k: v for k, v in weights.flatten_keys(".").items()}
        return weights

    def apply_weights(self, destination: Any, weights: Any) -> None:
        """Copies ``weights`` (any accepted format) into ``destination`` (a module or TensorDict), in place."""
        copy_weights_(to_weights(destination), to_weights(weights))


class WeightSyncScheme(abc.ABC):
    """Base class of weight-sync schemes.

    Args:
        strategy: the weight format sent over the transport, ``"tensordict"`` or ``"state_dict"``.
    """

    def __init__(self, strategy: Literal["state_dict", "tensordict"] = "tensordict") -> None:
        self.strategy = WeightStrategy(strategy) if isinstance(strategy, str) else strategy
        self.model_id: str | None = None
        self.worker_idx: int | None = None
        self.model: Any = None
        self._senders: list[Callable[[bytes], None]] = []
        self._worker_weights: list[TensorDictBase | None] = []
        self.initialized_on_sender = False
        self.initialized_on_receiver = False

    # ------------------------------------------------------------------ sender (the collector's process)
    def init_on_sender(
        self,
        model_id: str = "policy",
        *,
        model: Any = None,
        senders: Sequence[Callable[[bytes], None]] = (),
        worker_weights: Sequence[TensorDictBase | None] = (),
    ) -> None:
        """Connects the scheme to the workers.

        Args:
            model_id: the model this scheme updates (``"policy"``).
            model: the parent's copy of the model (the weights a bare ``send()`` pushes), if any.
            senders: one callable per worker that delivers a message to it.
            worker_weights: per worker, its weights when the parent can write them directly (shared memory).
        """
        self.model_id = model_id
        self.model = model
        self._senders = list(senders)
        self._worker_weights = list(worker_weights)
        self.initialized_on_sender = True

    def prepare_weights(self, weights: Any = None) -> Any:
        """The weights to send: ``weights`` in the strategy's format, else the sender's model's weights."""
        if weights is None:
            if self.model is None:
                raise ValueError(
                    f"{type(self).__name__}: no weights given and no sender-side model to read them from"
                )
            weights = self.model
        return self.strategy.extract_weights(weights)

    def send(self, weights: Any = None, worker_ids: int | Sequence[int] | None = None) -> None:
        """Sends ``weights`` (the sender model's when ``None``) to the workers (all when ``worker_ids`` is None)."""
        if not self.initialized_on_sender:
            raise RuntimeError(f"{type(self).__name__}.send() called before init_on_sender()")
        ids = range(len(self._senders)) if worker_ids is None else (
            [worker_ids] if isinstance(worker_ids, int) else list(worker_ids)
        )
        self._send(self.prepare_weights(weights), list(ids))

    @abc.abstractmethod
    def _send(self, weights: Any, worker_ids: list[int]) -> None:
        """Delivers prepared weights to the listed workers."""

    # ------------------------------------------------------------------ receiver (a worker process)
    def init_on_receiver(self, model_id: str = "policy", *, model: Any = None, worker_idx: int | None = None) -> None:
        """Attaches the worker's model (called inside the worker)."""
        self.model_id = model_id
        self.model = model
        self.worker_idx = worker_idx
        self.initialized_on_receiver = True

    def receive(self, payload: bytes) -> None:
        """Applies a message produced by :meth:`send` to the worker's model."""
        self.apply_weights(pickle.loads(payload))

    def apply_weights(self, weights: Any, inplace: bool = True) -> None:
        """Copies ``weights`` into the worker's model, in place."""
        if self.model is None:
            raise RuntimeError(f"{type(self).__name__}: no model attached on this side (init_on_receiver)")
        self.strategy.apply_weights(self.model, weights)

    def shutdown(self) -> None:
        """Drops the connections."""
        self._senders = []
        self._worker_weights = []

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_senders"] = []  # pipes belong to the parent
        state["_worker_weights"] = []
        return state


class MultiProcessWeightSyncScheme(WeightSyncScheme):
    """Sends a copy of the weights to each worker through its pipe; applied before the worker's next batch.

    Args:
        strategy: ``"tensordict"`` or ``"state_dict"``.
        sync: accepted for TorchRL compatibility: messages are ordered, so a batch requested after
            ``send`` always uses the new weights.

    Examples:
        >>> import torch
        >>> scheme = MultiProcessWeightSyncScheme()
        >>> inbox = []
        >>> scheme.init_on_sender("policy", senders=[inbox.append])
        >>> scheme.send(torch.nn.Linear(2, 1))
        >>> receiver, net = MultiProcessWeightSyncScheme(), torch.nn.Linear(2, 1)
        >>> receiver.init_on_receiver("policy", model=net, worker_idx=0)
        >>> receiver.receive(inbox[0])
    """

    def __init__(self, strategy: Literal["state_dict", "tensordict"] = "tensordict", sync: bool = True) -> None:
        super().__init__(strategy)
        self.sync = sync

    def _send(self, weights: Any, worker_ids: list[int]) -> None:
        if isinstance(weights, TensorDictBase):
            weights = weights.detach().cpu().clone()
        else:
            weights = {k: v.detach().cpu().clone() for k, v in weights.items()}
        payload = pickle.dumps(weights)
        for i in worker_ids:
            self._senders[i](payload)


class SharedMemWeightSyncScheme(WeightSyncScheme):
    """Writes the weights into shared-memory tensors the workers' models use directly (no message).

    Args:
        strategy: ``"tensordict"`` or ``"state_dict"``.
        sync: accepted for TorchRL compatibility (the write is visible as soon as ``send`` returns).
        per_worker_weights: accepted for TorchRL compatibility: each worker has its own buffer when its
            policy was built in the worker (``policy_factory``), one buffer is shared otherwise.

    Examples:
        >>> import torch
        >>> net = torch.nn.Linear(2, 1)
        >>> scheme = SharedMemWeightSyncScheme()
        >>> scheme.init_on_sender("policy", worker_weights=[to_weights(net).share_memory_()])
        >>> scheme.send(to_weights(net).apply(torch.zeros_like))
        >>> float(net.bias.detach())
        0.0
    """

    def __init__(
        self,
        strategy: Literal["state_dict", "tensordict"] = "tensordict",
        sync: bool = True,
        per_worker_weights: bool = False,
    ) -> None:
        super().__init__(strategy)
        self.sync = sync
        self.per_worker_weights = per_worker_weights

    def send(self, weights: Any = None, worker_ids: int | Sequence[int] | None = None) -> None:
        if not self.initialized_on_sender:
            raise RuntimeError("SharedMemWeightSyncScheme.send() called before init_on_sender()")
        ids = range(len(self._worker_weights)) if worker_ids is None else (
            [worker_ids] if isinstance(worker_ids, int) else list(worker_ids)
        )
        self._send(self.prepare_weights(weights), list(ids))

    def _send(self, weights: Any, worker_ids: list[int]) -> None:
        source = to_weights(weights)
        done: set[int] = set()
        for i in worker_ids:
            dest = self._worker_weights[i]
            if dest is None:
                raise RuntimeError(f"SharedMemWeightSyncScheme: worker {i} exposes no shared weights")
            if id(dest) in done or same_storage(dest, source):
                continue
            done.add(id(dest))
            copy_weights_(dest, source)


class NoWeightSyncScheme(WeightSyncScheme):
    """A scheme that never updates the workers (their policies keep their initial weights).

    Examples:
        >>> import torch
        >>> scheme = NoWeightSyncScheme()
        >>> scheme.init_on_sender("policy", senders=[print])
        >>> scheme.send(torch.nn.Linear(2, 1))  # nothing is sent
    """

    def send(self, weights: Any = None, worker_ids: int | Sequence[int] | None = None) -> None:
        return None

    def _send(self, weights: Any, worker_ids: list[int]) -> None:
        return None
