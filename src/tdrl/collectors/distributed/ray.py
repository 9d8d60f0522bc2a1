"""``RayCollector``: collectors running as Ray actors (local or on a cluster), as TorchRL's.

Each actor runs a :class:`~tdrl.collectors.Collector`; batches come back through Ray's object store, and
``update_policy_weights_`` puts the weights in the store once and has every actor load them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl.collectors._base import BaseCollector
from tdrl.collectors._single import Collector
from tdrl.collectors.utils import split_trajectories
from tdrl.envs import ExplorationType
from tdrl.weight_update.weights import to_weights

try:
    import ray
except ImportError:  # pragma: no cover - depends on the installed extras
    ray = None

__all__ = ["RayCollector"]

_TRAJ_KEY = ("collector", "traj_ids")


class _CollectorActor:
    """What each Ray actor holds: one collector (traj ids made unique across actors)."""

    def __init__(self, collector_class: type, idx: int, num: int, args: tuple, kwargs: dict) -> None:
        self.collector = collector_class(*args, **kwargs)
        self.iterator = iter(self.collector)
        self.idx, self.num = idx, num

    def next(self) -> TensorDictBase:
        batch = next(self.iterator)
        ids = batch.get(_TRAJ_KEY, None)
        if ids is not None:
            batch.set(_TRAJ_KEY, ids * self.num + self.idx)
        return batch

    def update_policy_weights_(self, weights: Any) -> None:
        self.collector.update_policy_weights_(weights)

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        torch.manual_seed(seed)
        return self.collector.set_seed(seed, static_seed)

    def state_dict(self) -> dict[str, Any]:
        return self.collector.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.collector.load_state_dict(state)

    def shutdown(self) -> None:
        self.collector.shutdown()


def _per_collector(value: Any, i: int, n: int, name: str) -> Any:
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} has {len(value)} entries, expected one per collector ({n})")
        return value[i]
    return value


class RayCollector(BaseCollector):
    """Runs ``num_collectors`` collectors as Ray actors and yields their batches.

    Args:
        create_env_fn: an env constructor, or one per collector.
        policy: the policy (copied to each actor), or ``None`` for random actions.

    Keyword Args:
        policy_factory: builds the policy in each actor (one callable or one per collector).
        frames_per_batch: frames per yielded batch (``sync=True``: split over the collectors and
            concatenated; ``sync=False``: each actor's batch is yielded as it arrives).
        total_frames: frames to collect (``-1``: forever).
        device / storing_device / env_device / policy_device: passed to each actor's collector; so are
            ``max_frames_per_traj``, ``init_random_frames``, ``reset_at_each_iter``, ``exploration_type``
            and ``trust_policy``.
        postproc / split_trajs / replay_buffer: applied in this process to each batch.
        collector_class: the collector each actor runs (``Collector``).
        collector_kwargs: extra keyword arguments of ``collector_class`` (a dict or one per collector).
        num_workers_per_collector: must be 1 (use a batched env for more envs per actor).
        sync: gather one batch from every actor per iteration.
        ray_init_config: keyword arguments of ``ray.init`` (when Ray is not initialised yet).
        remote_configs: ``ray.remote`` options of the actors (``num_cpus``, ``num_gpus``, ...).
        num_collectors: the number of actors (default: the length of ``create_env_fn`` or 1).
        update_after_each_batch: push the parent policy's weights after every batch.

    Examples:
        >>> RayCollector.__name__  # starting Ray takes seconds: see docs/collectors.md
        'RayCollector'
    """

    def __init__(
        self,
        create_env_fn: Callable[..., Any] | Sequence[Callable[..., Any]],
        policy: Any = None,
        *,
        policy_factory: Callable[[], Any] | Sequence[Callable[[], Any]] | None = None,
        trust_policy: bool | None = None,
        frames_per_batch: int,
        total_frames: int = -1,
        device: Any = None,
        storing_device: Any = None,
        env_device: Any = None,
        policy_device: Any = None,
        max_frames_per_traj: int | None = -1,
        init_random_frames: int | None = -1,
        reset_at_each_iter: bool = False,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        split_trajs: bool = False,
        exploration_type: ExplorationType = ExplorationType.RANDOM,
        collector_class: type = Collector,
        collector_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        num_workers_per_collector: int = 1,
        sync: bool = False,
        ray_init_config: Mapping[str, Any] | None = None,
        remote_configs: Mapping[str, Any] | None = None,
        num_collectors: int | None = None,
        update_after_each_batch: bool = False,
        replay_buffer: Any = None,
    ) -> None:
        self._actors: list[Any] = []
        if ray is None:
            raise ImportError("RayCollector needs Ray: pip install 'tdrl[distributed]'")
        if num_workers_per_collector != 1:
            raise ValueError("num_workers_per_collector must be 1: give each actor a batched env instead")
        if policy is not None and policy_factory is not None:
            raise TypeError("pass either policy or policy_factory, not both")
        if not isinstance(frames_per_batch, int) or frames_per_batch <= 0:
            raise ValueError(f"frames_per_batch must be a positive int, got {frames_per_batch!r}")
        n = num_collectors or (len(create_env_fn) if isinstance(create_env_fn, (list, tuple)) else 1)
        self.num_collectors = n
        self.sync = sync
        self.policy = policy
        self.postproc, self.split_trajs, self.replay_buffer = postproc, split_trajs, replay_buffer
        self.update_after_each_batch = update_after_each_batch
        self.frames_per_batch = self.requested_frames_per_batch = frames_per_batch
        self.total_frames = -1 if total_frames is None or total_frames < 0 else int(total_frames)
        self._frames = 0
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(**dict(ray_init_config or {}))
        actor_cls = ray.remote(**dict(remote_configs or {"num_cpus": 1}))(_CollectorActor)
        per_actor = -(-frames_per_batch // n) if sync else frames_per_batch
        for i in range(n):
            kwargs = dict(
                policy_factory=_per_collector(policy_factory, i, n, "policy_factory"), trust_policy=trust_policy,
                frames_per_batch=per_actor, total_frames=-1, device=_per_collector(device, i, n, "device"),
                storing_device=_per_collector(storing_device, i, n, "storing_device"),
                env_device=_per_collector(env_device, i, n, "env_device"),
                policy_device=_per_collector(policy_device, i, n, "policy_device"),
                max_frames_per_traj=max_frames_per_traj if (max_frames_per_traj or -1) > 0 else None,
                init_random_frames=max(0, init_random_frames or 0), reset_at_each_iter=reset_at_each_iter,
                exploration_type=exploration_type,
            )
            kwargs.update(_per_collector(collector_kwargs, i, n, "collector_kwargs") or {})
            env_fn = _per_collector(create_env_fn, i, n, "create_env_fn")
            self._actors.append(actor_cls.remote(collector_class, i, n, (env_fn, policy), kwargs))
        self._pending: dict[Any, int] = {}

    @property
    def remote_collectors(self) -> list[Any]:
        """The Ray actor handles."""
        return list(self._actors)

    def _finish(self, batch: TensorDictBase) -> TensorDictBase | None:
        self._frames += batch.numel()
        if self.split_trajs:
            batch = split_trajectories(batch)
        if self.postproc is not None:
            batch = self.postproc(batch)
        if self.update_after_each_batch and self.policy is not None:
            self.update_policy_weights_()
        if self.replay_buffer is not None:
            self.replay_buffer.extend(batch)
            return None
        return batch

    def iterator(self) -> Iterator[TensorDictBase | None]:
        while self.total_frames < 0 or self._frames < self.total_frames:
            if not self._actors:
                raise RuntimeError("RayCollector was shut down")
            if self.sync:
                batches = ray.get([actor.next.remote() for actor in self._actors])
                yield self._finish(torch.cat(batches, 0))
                continue
            for i, actor in enumerate(self._actors):
                if i not in self._pending.values():
                    self._pending[actor.next.remote()] = i
            (ready,), _ = ray.wait(list(self._pending), num_returns=1)
            self._pending.pop(ready)
            yield self._finish(ray.get(ready))

    def update_policy_weights_(self, policy_or_weights: Any = None, *, worker_ids: Any = None, **kwargs: Any) -> None:
        """Sends weights (the local policy's when ``None``) to every actor (or ``worker_ids``)."""
        source = self.policy if policy_or_weights is None else policy_or_weights
        if source is None:
            raise ValueError("no local policy: pass the weights to send")
        ref = ray.put(to_weights(source).detach().cpu().clone())
        ids = range(len(self._actors)) if worker_ids is None else (
            [worker_ids] if isinstance(worker_ids, int) else list(worker_ids)
        )
        ray.get([self._actors[i].update_policy_weights_.remote(ref) for i in ids])

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        for actor in self._actors:
            out = ray.get(actor.set_seed.remote(seed, static_seed))
            seed = out if out is not None else seed + 1
        return seed

    def state_dict(self) -> dict[str, Any]:
        states = ray.get([actor.state_dict.remote() for actor in self._actors])
        return {"frames": self._frames, **{f"collector{i}": s for i, s in enumerate(states)}}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self._frames = int(state_dict.get("frames", 0))
        ray.get([actor.load_state_dict.remote(state_dict[f"collector{i}"])
                 for i, actor in enumerate(self._actors) if f"collector{i}" in state_dict])

    def shutdown(self) -> None:
        actors, self._actors = getattr(self, "_actors", []), []
        if not actors or ray is None or not ray.is_initialized():
            return
        for actor in actors:
            try:
                ray.get(actor.shutdown.remote(), timeout=10)
            except Exception:  # noqa: BLE001 - the actor may be gone already
                pass
            ray.kill(actor)
        if getattr(self, "_owns_ray", False):
            ray.shutdown()
