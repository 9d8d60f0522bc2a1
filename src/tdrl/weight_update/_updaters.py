"""Weight updaters (TorchRL's older API): push a server policy's weights into a collector's policies."""

from __future__ import annotations

import abc
import weakref
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl.weight_update.weights import copy_weights_, same_storage, to_weights

__all__ = ["MultiProcessedWeightUpdater", "VanillaWeightUpdater", "WeightUpdaterBase"]


class WeightUpdaterBase(abc.ABC):
    """Base class of weight updaters: a collector calls :meth:`push_weights` from ``update_policy_weights_``.

    Subclasses implement :meth:`_sync_weights_with_worker` (write the weights into one worker's copy) and may
    override :meth:`_get_server_weights` (weights to push when none are given) and :meth:`all_worker_ids`.
    """

    _collector_wr: Any = None

    @property
    def post_hooks(self) -> list[Callable[[], None]]:
        """Callables run after each push."""
        if "_post_hooks" not in self.__dict__:
            self.__dict__["_post_hooks"] = []
        return self.__dict__["_post_hooks"]

    def register_collector(self, collector: Any) -> None:
        """Attaches the collector that owns this updater (held by weak reference)."""
        self._collector_wr = weakref.ref(collector)

    @property
    def collector(self) -> Any:
        """The registered collector, or ``None``."""
        return self._collector_wr() if self._collector_wr is not None else None

    def init(self, *args: Any, **kwargs: Any) -> None:
        """Hook for custom initialisation (no-op by default)."""
        return None

    def register_post_hook(self, hook: Callable[[], None]) -> None:
        """Runs ``hook()`` after every push."""
        self.post_hooks.append(hook)

    def all_worker_ids(self) -> list[Any] | None:
        """The workers to update when none are named (``None``: one local policy)."""
        return None

    def _get_server_weights(self) -> TensorDictBase | None:
        return None

    def _maybe_map_weights(self, weights: Any) -> Any:
        return None if weights is None else to_weights(weights)

    def _skip_update(self, worker_id: Any) -> bool:
        return False

    @abc.abstractmethod
    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any = None) -> None:
        """Writes ``server_weights`` into worker ``worker_id``'s policy."""

    def push_weights(self, policy_or_weights: Any = None, worker_ids: Any = None) -> None:
        """Pushes weights (a module, TensorDict or state_dict; the server's when ``None``) to the workers.

        Args:
            policy_or_weights: the new weights.
            worker_ids: one id or a list of ids; all workers when ``None``.
        """
        weights = self._maybe_map_weights(
            self._get_server_weights() if policy_or_weights is None else policy_or_weights
        )
        if weights is None:
            return
        if isinstance(worker_ids, (int, torch.device)):
            worker_ids = [worker_ids]
        elif worker_ids is None:
            worker_ids = self.all_worker_ids()
        if worker_ids is None:
            self._sync_weights_with_worker(server_weights=weights)
        else:
            for worker in worker_ids:
                if not self._skip_update(worker):
                    self._sync_weights_with_worker(worker_id=worker, server_weights=weights)
        for hook in self.post_hooks:
            hook()

    def __call__(self, policy_or_weights: Any = None, worker_ids: Any = None) -> None:
        self.push_weights(policy_or_weights, worker_ids)


class VanillaWeightUpdater(WeightUpdaterBase):
    """Copies weights into one local policy's weights, in place.

    Args:
        weight_getter: returns the server weights pushed by a bare ``push_weights()``.
        policy_weights: the policy's weights (``TensorDict.from_module(policy)``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> net = torch.nn.Linear(2, 1)
        >>> updater = VanillaWeightUpdater(policy_weights=TensorDict.from_module(net))
        >>> updater.push_weights(TensorDict.from_module(net).apply(torch.zeros_like))
        >>> float(net.bias.detach())
        0.0
    """

    def __init__(
        self, *, weight_getter: Callable[[], TensorDictBase] | None = None, policy_weights: TensorDictBase
    ) -> None:
        self.weight_getter = weight_getter
        self.policy_weights = policy_weights

    def _get_server_weights(self) -> TensorDictBase | None:
        return self.weight_getter() if self.weight_getter is not None else None

    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any = None) -> None:
        copy_weights_(self.policy_weights, server_weights)


class MultiProcessedWeightUpdater(WeightUpdaterBase):
    """Copies weights into several workers' weights (shared-memory or device copies), in place.

    Args:
        get_server_weights: returns the weights pushed by a bare ``push_weights()`` (``None``: nothing to push).
        policy_weights: ``{worker id or device: weights}``; each is updated in place.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> nets = [torch.nn.Linear(2, 1) for _ in range(2)]
        >>> updater = MultiProcessedWeightUpdater(
        ...     get_server_weights=None, policy_weights={i: TensorDict.from_module(n) for i, n in enumerate(nets)})
        >>> updater.push_weights(TensorDict.from_module(nets[0]).apply(torch.ones_like))
        >>> [float(n.bias.detach()) for n in nets]
        [1.0, 1.0]
    """

    def __init__(
        self,
        *,
        get_server_weights: Callable[[], TensorDictBase] | None,
        policy_weights: dict[Any, TensorDictBase],
    ) -> None:
        self.get_server_weights = get_server_weights
        self.policy_weights = policy_weights

    def all_worker_ids(self) -> list[Any]:
        return list(self.policy_weights)

    def _get_server_weights(self) -> TensorDictBase | None:
        return self.get_server_weights() if self.get_server_weights is not None else None

    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any = None) -> None:
        if worker_id not in self.policy_weights:
            raise KeyError(f"unknown worker id {worker_id!r}; known: {list(self.policy_weights)}")
        dest = self.policy_weights[worker_id]
        if same_storage(dest, server_weights):
            return  # the worker already reads these very tensors (shared memory)
        copy_weights_(dest, server_weights)
