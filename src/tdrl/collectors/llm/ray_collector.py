"""``RayLLMCollector``: an :class:`~tdrl.collectors.llm.LLMCollector` running in a Ray actor (extra ``distributed``).

The actor builds the env and the policy in its own process: with ``policy_factory`` the wrapper (and its
model) is created there and never pickled. Batches come back through Ray's object store. A replay buffer
stays in the calling process: the batches the actor yields are written into it there, so a plain local
buffer (and ``MCAdvantage`` on it) sees every turn. ``update_policy_weights_`` puts the weights in the object
store once and the actor loads them into its policy, bumping its policy version.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.collectors.llm.base import LLMCollector
from tdrl.envs import EnvBase

try:
    import ray
except ImportError:  # pragma: no cover - depends on the installed extras
    ray = None

__all__ = ["RayLLMCollector"]


class _LLMCollectorActor:
    """What the Ray actor holds: one ``LLMCollector`` and its iterator."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.collector = LLMCollector(**kwargs)
        self._iterator: Iterator[TensorDictBase | None] | None = None

    def next(self) -> tuple[bool, TensorDictBase | None]:
        """``(True, batch)``, or ``(False, None)`` once ``total_dialog_turns`` are collected."""
        if self._iterator is None:
            self._iterator = iter(self.collector)
        try:
            return True, next(self._iterator)
        except StopIteration:
            return False, None

    def update_policy_weights_(self, weights: Any) -> int | None:  # noqa: ANN401
        self.collector.update_policy_weights_(weights)
        return self.collector.policy_version

    def increment_version(self) -> None:
        self.collector.increment_version()

    def policy_version(self) -> int | None:
        return self.collector.policy_version

    def set_postproc(self, postproc: Callable[[TensorDictBase], TensorDictBase] | None) -> None:
        self.collector.postproc = postproc

    def policy_weights(self) -> TensorDictBase:
        """The actor's policy parameters (for checks: they must follow ``update_policy_weights_``)."""
        return TensorDict.from_module(self.collector.policy).data.clone()

    def shutdown(self) -> None:
        self.collector.shutdown()


def _require_ray() -> Any:  # noqa: ANN401
    if ray is None:
        raise ImportError("RayLLMCollector needs ray: install the distributed extra, pip install 'tdrl[distributed]'")
    return ray


class RayLLMCollector:
    """An ``LLMCollector`` in a Ray actor, iterated (or run in the background) from the calling process.

    Args:
        env: the environment, or a function building it (built in the actor).

    Keyword Args:
        policy: the policy (pickled to the actor; exclusive with ``policy_factory``).
        policy_factory: builds the policy inside the actor (for wrappers and models that should not be
            pickled, or that must be placed on the actor's device).
        dialog_turns_per_batch / total_dialog_turns / yield_only_last_steps: as for the local collector, as are
            ``yield_completed_trajectories``, ``postproc``, ``async_envs``, ``reset_at_each_iter``,
            ``flatten_data``, ``weight_updater``, ``track_policy_version`` and ``verbose``
            (:class:`~tdrl.collectors.llm.LLMCollector`, run in the actor).
        replay_buffer: written in the calling process with each batch the actor yields (iteration then
            yields ``None``).
        ray_init_config: arguments of ``ray.init`` when Ray is not running yet.
        remote_config: actor options (``num_cpus``, ``num_gpus``, ...).
        num_cpus / num_gpus: the actor's resources (override ``remote_config``).
        sync_iter: ``True``: the actor collects only when asked; ``False``: it collects the next batch while
            the caller handles the current one.

    Examples:
        >>> RayLLMCollector.__name__  # a Ray actor: see tests/collectors/llm/test_ray_llm_collector.py
        'RayLLMCollector'
    """

    def __init__(
        self,
        env: EnvBase | Callable[[], EnvBase],
        *,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        policy_factory: Callable[[], Callable[[TensorDictBase], TensorDictBase]] | None = None,
        dialog_turns_per_batch: int,
        total_dialog_turns: int = -1,
        yield_only_last_steps: bool | None = None,
        yield_completed_trajectories: bool | None = None,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        async_envs: bool | None = None,
        replay_buffer: Any = None,  # noqa: ANN401
        reset_at_each_iter: bool = False,
        flatten_data: bool | None = None,
        weight_updater: Any = None,  # noqa: ANN401
        ray_init_config: dict[str, Any] | None = None,
        remote_config: dict[str, Any] | None = None,
        track_policy_version: bool = False,
        sync_iter: bool = True,
        verbose: bool = False,
        num_cpus: int | None = None,
        num_gpus: int | None = None,
    ) -> None:
        ray_ = _require_ray()
        if (policy is None) == (policy_factory is None):
            raise TypeError("RayLLMCollector: pass exactly one of policy or policy_factory")
        if not ray_.is_initialized():
            ray_.init(**(ray_init_config or {}))
        options = dict(remote_config or {})
        for name, value in (("num_cpus", num_cpus), ("num_gpus", num_gpus)):
            if value is not None:
                options[name] = value
        self._local_policy = policy
        self.replay_buffer = replay_buffer
        self.sync_iter = bool(sync_iter)
        self._dialog_turns_per_batch = dialog_turns_per_batch
        self._total_dialog_turns = total_dialog_turns
        kwargs = dict(
            env=env, policy=policy, policy_factory=policy_factory, dialog_turns_per_batch=dialog_turns_per_batch,
            total_dialog_turns=total_dialog_turns, yield_only_last_steps=yield_only_last_steps,
            yield_completed_trajectories=yield_completed_trajectories, postproc=postproc, async_envs=async_envs,
            reset_at_each_iter=reset_at_each_iter,
            # the actor yields batches; a buffer given here is written in this process, flattened as it would be
            flatten_data=(replay_buffer is not None) if flatten_data is None else flatten_data,
            weight_updater=weight_updater, track_policy_version=track_policy_version, verbose=verbose,
        )
        actor_cls = ray_.remote(_LLMCollectorActor)
        self._actor = (actor_cls.options(**options) if options else actor_cls).remote(kwargs)
        self._pending: Any = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # ------------------------------------------------------------------ collection
    @property
    def remote_collector(self) -> Any:  # noqa: ANN401
        """The Ray actor handle."""
        return self._actor

    @property
    def dialog_turns_per_batch(self) -> int:
        return self._dialog_turns_per_batch

    @property
    def total_dialog_turns(self) -> int:
        return self._total_dialog_turns

    def _fetch(self) -> tuple[bool, TensorDictBase | None]:
        ref = self._pending if self._pending is not None else self._actor.next.remote()
        self._pending = None if self.sync_iter else self._actor.next.remote()
        more, batch = ray.get(ref)
        if not more:
            self._pending = None
        return more, batch

    def next(self) -> TensorDictBase | None:
        """One batch from the actor (``None`` when it went to the replay buffer).

        Raises:
            StopIteration: when ``total_dialog_turns`` turns have been collected.
        """
        more, batch = self._fetch()
        if not more:
            raise StopIteration
        if self.replay_buffer is not None:
            self.replay_buffer.extend(batch)
            return None
        return batch

    def __iter__(self) -> Iterator[TensorDictBase | None]:
        if self._thread is not None:
            raise RuntimeError("the collector runs in the background (start()): read the replay buffer instead")
        while True:
            try:
                yield self.next()
            except StopIteration:
                return

    def start(self) -> None:
        """Collects in the background into ``replay_buffer`` until the budget is spent or ``async_shutdown``."""
        if self.replay_buffer is None:
            raise RuntimeError("start() needs a replay_buffer to write into")
        if self._thread is not None:
            raise RuntimeError("the collector is already running")

        def run() -> None:
            while not self._stop.is_set():
                try:
                    self.next()
                except StopIteration:
                    return

        self._thread = threading.Thread(target=run, name="tdrl-ray-llm-collector", daemon=True)
        self._thread.start()

    def is_running(self) -> bool:
        """Whether background collection (``start``) is going on."""
        return self._thread is not None and self._thread.is_alive()

    def async_shutdown(self, timeout: float | None = None) -> None:
        """Stops background collection (after the batch under way) and waits up to ``timeout`` seconds."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self._stop.clear()

    def set_postproc(self, postproc: Callable[[TensorDictBase], TensorDictBase] | None) -> None:
        """Replaces the post-processing applied in the actor."""
        ray.get(self._actor.set_postproc.remote(postproc))

    # ------------------------------------------------------------------ weights / versions
    def update_policy_weights_(self, policy_or_weights: Any = None, *, worker_ids: Any = None, **kwargs: Any) -> None:  # noqa: ANN401
        """Loads new weights into the actor's policy.

        Args:
            policy_or_weights: a module, a ``TensorDict`` of parameters or a ``state_dict``; ``None`` reads the
                weights of the local ``policy`` (an error with ``policy_factory``, whose policy lives remotely).
            worker_ids: accepted for TorchRL compatibility (one actor).
            **kwargs: accepted for TorchRL compatibility (its weight-sync options), unused.
        """
        if policy_or_weights is None:
            if not isinstance(self._local_policy, torch.nn.Module):
                raise ValueError(
                    "update_policy_weights_() without weights needs a local policy module; the policy was built "
                    "by policy_factory in the actor: pass the new weights (a module or TensorDict.from_module(...))"
                )
            policy_or_weights = self._local_policy
        if isinstance(policy_or_weights, torch.nn.Module):
            policy_or_weights = TensorDict.from_module(policy_or_weights).data
        # one copy in the object store, fetched by the actor
        ray.get(self._actor.update_policy_weights_.remote(ray.put(policy_or_weights)))

    def increment_version(self) -> None:
        """Bumps the actor's policy version."""
        ray.get(self._actor.increment_version.remote())

    @property
    def policy_version(self) -> int | None:
        """The actor's policy version (``None`` without ``track_policy_version``)."""
        return ray.get(self._actor.policy_version.remote())

    def shutdown(self) -> None:
        """Stops background collection, shuts the actor's collector down and ends the actor."""
        self.async_shutdown()
        if self._actor is not None:
            try:
                ray.get(self._actor.shutdown.remote())
            finally:
                ray.kill(self._actor)
                self._actor = None

    def __enter__(self) -> RayLLMCollector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
