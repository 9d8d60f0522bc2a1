"""``RayCollector``: collectors running as Ray actors (local or on a cluster), as TorchRL's.

Each actor runs a collector (``collector_class``: :class:`~tdrl.collectors.Collector`, or a multi-process
collector with ``num_workers_per_collector`` workers inside the actor). Batches come back through Ray's
object store, in lockstep (``sync=True``: one from every actor, stacked) or as they come; weights go out
through a :class:`~tdrl.weight_update.RayWeightSyncScheme` (default) or a
:class:`~tdrl.collectors.RayWeightUpdater`. A :class:`~tdrl.data.RayReplayBuffer` is extended by the actors
themselves. An actor that dies is reported with its error, and replaced when ``remote_configs`` sets
``max_restarts``; every wait is bounded by ``timeout``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl._utils.logging import logger
from tdrl._utils.optional_ray import RayLease
from tdrl.collectors._base import BaseCollector
from tdrl.collectors._multi_async import MultiAsyncCollector
from tdrl.collectors._multi_base import MultiCollector
from tdrl.collectors._multi_sync import MultiSyncCollector
from tdrl.collectors._single import Collector
from tdrl.collectors.distributed._ray_actor import CollectorActor
from tdrl.collectors.utils import split_trajectories
from tdrl.envs import ExplorationType
from tdrl.weight_update import WeightSyncScheme, WeightUpdaterBase
from tdrl.weight_update.ray import RayWeightSyncScheme, RayWeightUpdater, put_weights

__all__ = ["DEFAULT_RAY_INIT_CONFIG", "DEFAULT_REMOTE_CLASS_CONFIG", "RayCollector"]

#: ``ray.init`` arguments when none are given (a local instance; ``address="auto"`` joins a cluster)
DEFAULT_RAY_INIT_CONFIG: dict[str, Any] = {"address": None, "include_dashboard": False, "log_to_driver": True}
#: ``ray.remote`` options of each collector actor when none are given
DEFAULT_REMOTE_CLASS_CONFIG: dict[str, Any] = {"num_cpus": 1}

_START_TIMEOUT = 300.0
_CLASSES = {"single": Collector, "sync": MultiSyncCollector, "async": MultiAsyncCollector}


def _as_list(value: Any) -> Any:
    """A tuple or a YAML list (OmegaConf's ``ListConfig``, from a Hydra config) of per-collector values as a list."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, list)):
        return list(value)
    return value


def _per_collector(value: Any, n: int, name: str) -> list[Any]:
    value = _as_list(value)
    if isinstance(value, list):
        if len(value) != n:
            raise ValueError(f"{name} has {len(value)} entries, expected one per collector ({n})")
        return list(value)
    return [value] * n


def _resolve_collector_class(collector_class: type | str, num_workers_per_collector: int) -> type:
    """The collector class each actor runs (a name of ``_CLASSES`` or a ``BaseCollector`` subclass), checked."""
    if isinstance(collector_class, str):
        if collector_class not in _CLASSES:
            raise ValueError(f"collector_class must be a class or one of {sorted(_CLASSES)}, got {collector_class!r}")
        collector_class = _CLASSES[collector_class]
    if not (isinstance(collector_class, type) and issubclass(collector_class, BaseCollector)):
        raise TypeError(f"collector_class must be a BaseCollector subclass, got {collector_class!r}")
    if num_workers_per_collector != 1 and not issubclass(collector_class, MultiCollector):
        raise ValueError(f"num_workers_per_collector={num_workers_per_collector} needs a multi-process "
                         "collector_class ('sync' or 'async'); a Collector steps one env")
    return collector_class


class RayCollector(BaseCollector):
    """Runs ``num_collectors`` collectors as Ray actors and yields their batches.

    Args:
        create_env_fn: an env constructor, or one per collector.
        policy: the policy (copied to each actor), or ``None`` (``policy_factory`` or random actions).

    Keyword Args:
        policy_factory: builds the policy in each actor (one callable or one per collector).
        frames_per_batch: frames per yielded batch; ``sync=True`` splits it evenly over the actors (it must
            be a multiple of ``num_collectors``), ``sync=False`` yields each actor's batch as it arrives.
        total_frames: frames to collect (``-1``: forever).
        device / storing_device / env_device / policy_device: each actor's collector's (one or a list).
        max_frames_per_traj / init_random_frames / reset_at_each_iter / exploration_type / trust_policy: passed
            to each actor's collector (``init_random_frames`` split over the actors), as is ``no_cuda_sync``.
        postproc / split_trajs: applied in this process to each batch.
        collector_class: what each actor runs: a collector class, or ``"single"``, ``"sync"``, ``"async"``.
        collector_kwargs: more arguments of ``collector_class`` (a dict or one per collector).
        num_workers_per_collector: worker processes of a multi-process ``collector_class`` in each actor.
        sync: gather one batch from every actor per iteration, stacked to ``[num_collectors, ...]``.
        ray_init_config: ``ray.init`` arguments when Ray is not running (:data:`DEFAULT_RAY_INIT_CONFIG`).
        remote_configs: ``ray.remote`` options per actor (``num_cpus``, ``num_gpus``, ``memory``; one dict or
            one per collector). ``max_restarts`` (tdrl: how many times a dead actor is replaced, -1: always)
            is handled by the collector, which rebuilds the actor and sends it the latest weights.
        num_collectors: the number of actors (default: the length of ``create_env_fn``, else 1).
        update_after_each_batch: push the local policy's weights before each batch (to the actor that
            delivered the last one when ``sync=False``).
        max_weight_update_interval: with a ``RayWeightUpdater``, an actor is updated at least every this
            many batches (-1: only on ``update_policy_weights_``).
        replay_buffer: a :class:`~tdrl.data.RayReplayBuffer` the actors extend directly (the iterator then
            yields ``None``), or a local buffer extended here with each batch.
        weight_updater: a :class:`~tdrl.weight_update.WeightUpdaterBase` (or a factory) instead of a scheme.
        weight_sync_schemes: ``{"policy": scheme}`` (default: :class:`RayWeightSyncScheme`).
        weight_recv_schemes: not used by tdrl (a RayCollector only sends weights); must be ``None``.
        use_env_creator: accepted for TorchRL compatibility (env constructors are pickled as they are).
        trajs_per_batch: must be ``None`` (tdrl collectors count frames).
        pre_collect_hook / post_collect_hook: run in each actor before / after each of its batches.
        track_policy_version: write ``"policy_version"`` (the actor's count of weight updates) per frame.
        timeout: seconds to wait for a batch or an actor call before ``TimeoutError`` (tdrl's addition).

    Examples:
        >>> RayCollector.__name__  # starting Ray takes seconds: see docs/distributed.md
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
        collector_class: type | str = Collector,
        collector_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        num_workers_per_collector: int = 1,
        sync: bool = False,
        ray_init_config: Mapping[str, Any] | None = None,
        remote_configs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        num_collectors: int | None = None,
        update_after_each_batch: bool = False,
        max_weight_update_interval: int = -1,
        replay_buffer: Any = None,
        weight_updater: WeightUpdaterBase | Callable[[], WeightUpdaterBase] | None = None,
        weight_sync_schemes: Mapping[str, WeightSyncScheme] | None = None,
        weight_recv_schemes: Mapping[str, WeightSyncScheme] | None = None,
        use_env_creator: bool = False,
        no_cuda_sync: bool | None = None,
        trajs_per_batch: int | None = None,
        pre_collect_hook: Callable[[], None] | None = None,
        post_collect_hook: Callable[[TensorDictBase], None] | None = None,
        track_policy_version: bool = False,
        timeout: float | None = 600.0,
    ) -> None:
        self._actors: list[Any] = []
        self._check_args(policy, policy_factory, frames_per_batch, weight_recv_schemes, trajs_per_batch,
                         weight_updater, weight_sync_schemes)
        collector_class = _resolve_collector_class(collector_class, num_workers_per_collector)
        create_env_fn = _as_list(create_env_fn)
        n = num_collectors or (len(create_env_fn) if isinstance(create_env_fn, list) else 1)
        if sync and frames_per_batch % n:
            raise ValueError(f"sync=True splits frames_per_batch ({frames_per_batch}) over {n} collectors: "
                             "it must be a multiple of num_collectors")
        self.num_collectors, self.sync, self.timeout = n, sync, timeout
        self.policy, self.collector_class = policy, collector_class
        self.postproc, self.split_trajs, self.replay_buffer = postproc, split_trajs, replay_buffer
        self.update_after_each_batch = update_after_each_batch
        self.max_weight_update_interval = max_weight_update_interval
        self.frames_per_batch = self.requested_frames_per_batch = frames_per_batch
        self.total_frames = -1 if total_frames is None or total_frames < 0 else int(total_frames)
        self.collected_frames = 0
        self._setup_policy_version(track_policy_version)
        self._remote_buffer = getattr(replay_buffer, "service_backend", None) == "ray"
        self._per_actor = frames_per_batch // n if sync else frames_per_batch
        self._lease = RayLease("RayCollector", dict(DEFAULT_RAY_INIT_CONFIG if ray_init_config is None
                                                     else ray_init_config))
        self._ray = self._lease.ray
        self._set_remote_configs(remote_configs)
        common = self._common_kwargs(trust_policy, max_frames_per_traj, init_random_frames, reset_at_each_iter,
                                     exploration_type, no_cuda_sync)
        per = {name: _per_collector(v, n, name) for name, v in (
            ("device", device), ("storing_device", storing_device), ("env_device", env_device),
            ("policy_device", policy_device), ("policy_factory", policy_factory),
            ("create_env_fn", create_env_fn), ("collector_kwargs", collector_kwargs))}
        self._actor_specs = self._build_actor_specs(common, per, policy, num_workers_per_collector)
        self._hooks = {"pre_collect_hook": pre_collect_hook, "post_collect_hook": post_collect_hook,
                       "track_policy_version": track_policy_version}
        self._start_actors()
        self._setup_weight_sync(weight_updater, weight_sync_schemes)
        self._last_weights: Any = None  # object-store ref of the latest weights (sent to replacement actors)
        self._pending: dict[Any, int] = {}

    @staticmethod
    def _check_args(policy: Any, policy_factory: Any, frames_per_batch: Any, weight_recv_schemes: Any,
                    trajs_per_batch: Any, weight_updater: Any, weight_sync_schemes: Any) -> None:
        if policy is not None and policy_factory is not None:
            raise TypeError("pass either policy or policy_factory, not both")
        if not isinstance(frames_per_batch, int) or isinstance(frames_per_batch, bool) or frames_per_batch <= 0:
            raise ValueError(f"frames_per_batch must be a positive int, got {frames_per_batch!r}")
        if weight_recv_schemes is not None:
            raise ValueError("weight_recv_schemes: a RayCollector only sends weights; leave it None")
        if trajs_per_batch is not None:
            raise ValueError("trajs_per_batch: tdrl collectors count frames (frames_per_batch); leave it None")
        if weight_updater is not None and weight_sync_schemes is not None:
            raise TypeError("pass either weight_updater or weight_sync_schemes, not both")

    def _set_remote_configs(self, remote_configs: Any) -> None:
        """Splits each actor's ``ray.remote`` options from its tdrl-side ``max_restarts`` budget."""
        configs = _per_collector(dict(DEFAULT_REMOTE_CLASS_CONFIG) if remote_configs is None else remote_configs,
                                 self.num_collectors, "remote_configs")
        self._restarts_left = [int(dict(c).get("max_restarts", 0)) for c in configs]
        self._remote_configs = [{k: v for k, v in dict(c).items() if k != "max_restarts"} for c in configs]

    def _common_kwargs(self, trust_policy: bool | None, max_frames_per_traj: int | None,
                       init_random_frames: int | None, reset_at_each_iter: bool, exploration_type: ExplorationType,
                       no_cuda_sync: bool | None) -> dict[str, Any]:
        """The collector arguments every actor shares (its share of the frames, the trajectory limits)."""
        common = dict(trust_policy=trust_policy, frames_per_batch=self._per_actor, total_frames=-1,
                      max_frames_per_traj=max_frames_per_traj if (max_frames_per_traj or -1) > 0 else None,
                      init_random_frames=max(0, init_random_frames or 0) // self.num_collectors,
                      reset_at_each_iter=reset_at_each_iter, exploration_type=exploration_type)
        if no_cuda_sync is not None:
            common["no_cuda_sync"] = no_cuda_sync
        return common

    def _build_actor_specs(self, common: dict[str, Any], per: dict[str, list[Any]], policy: Any,
                           num_workers_per_collector: int) -> list[tuple[tuple, dict]]:
        """The ``(args, kwargs)`` of each actor's collector: ``common`` plus the actor's entries of ``per``."""
        n = self.num_collectors
        clients = self.replay_buffer.clients(n) if self._remote_buffer else [None] * n
        multi = issubclass(self.collector_class, MultiCollector)
        specs: list[tuple[tuple, dict]] = []
        for i in range(n):
            kwargs = {**common, **{k: per[k][i] for k in ("device", "storing_device", "env_device", "policy_device",
                                                          "policy_factory")}}
            if clients[i] is not None:
                kwargs["replay_buffer"] = clients[i]
            kwargs.update(dict(per["collector_kwargs"][i] or {}))
            env_fn = per["create_env_fn"][i]
            if multi:
                env_fn = [env_fn] * num_workers_per_collector
            specs.append(((env_fn, policy), kwargs))
        return specs

    def _start_actors(self) -> None:
        """Spawns every actor and waits for it to start; on any failure shuts down and re-raises."""
        try:
            self._actors = [self._spawn(i) for i in range(self.num_collectors)]
            self._wait([a.pid.remote() for a in self._actors], "start", starting=True)  # constructor errors surface here
        except BaseException:
            self.shutdown()
            raise

    def _spawn(self, i: int) -> Any:
        actor_cls = self._ray.remote(**self._remote_configs[i])(CollectorActor)
        args, kwargs = self._actor_specs[i]
        return actor_cls.remote(self.collector_class, i, self.num_collectors, args, kwargs, **self._hooks)

    def _setup_weight_sync(self, weight_updater: Any, weight_sync_schemes: Any) -> None:
        weights = TensorDict.from_module(self.policy).data if isinstance(self.policy, torch.nn.Module) else None
        self.policy_weights = weights
        if weight_updater is None and weight_sync_schemes is None and self.max_weight_update_interval > -1:
            weight_updater = RayWeightUpdater(weights, self._actors, self.max_weight_update_interval)
        if weight_updater is not None:
            if not isinstance(weight_updater, WeightUpdaterBase):
                weight_updater = weight_updater()
            weight_updater.register_collector(self)
            self.weight_updater, self._weight_sync_schemes = weight_updater, None
            return
        self.weight_updater = None
        self._weight_sync_schemes = dict(weight_sync_schemes or {"policy": RayWeightSyncScheme(timeout=self.timeout)})
        for model_id, scheme in self._weight_sync_schemes.items():
            if model_id != "policy":
                raise KeyError(f"weight_sync_schemes: unknown model id {model_id!r}; RayCollector syncs 'policy'")
            scheme.init_on_sender(model_id, model=self.policy, remote_collectors=self._actors)

    @property
    def remote_collectors(self) -> list[Any]:
        """The Ray actor handles."""
        return list(self._actors)

    @property
    def num_workers(self) -> int:
        """The number of actors."""
        return self.num_collectors

    def _wait(self, refs: list[Any], what: str, *, starting: bool = False) -> list[Any]:
        # Starting an actor (a process, its imports, the env) can take minutes on a busy machine.
        timeout = None if self.timeout is None else max(self.timeout, _START_TIMEOUT) if starting else self.timeout
        try:
            return self._ray.get(refs, timeout=timeout)
        except self._ray.exceptions.GetTimeoutError as err:
            raise TimeoutError(f"RayCollector: {what} took more than {timeout}s; the actors may be "
                               "stuck or the cluster has too few free CPUs for them (raise `timeout`)") from err

    # ------------------------------------------------------------------ faults
    def _replace(self, i: int, err: BaseException) -> Any:
        """Replaces dead actor ``i`` when restarts remain, else raises its error."""
        if self._restarts_left[i] == 0:
            raise RuntimeError(f"RayCollector: collector actor {i} died: {err}. Set remote_configs="
                               "{'max_restarts': N} to replace dead actors") from err
        self._restarts_left[i] -= 1
        logger.warning("RayCollector: collector actor %d died (%s); starting a replacement", i, err)
        try:
            self._ray.kill(self._actors[i], no_restart=True)
        except Exception:  # noqa: BLE001 - it is dead already
            pass
        actor = self._spawn(i)
        self._actors[i] = actor
        refs = [actor.set_policy_version.remote(self._policy_version or 0)]
        if self._last_weights is not None:
            refs.append(actor.update_policy_weights_.remote(self._last_weights))
            refs.append(actor.set_policy_version.remote(self._policy_version or 0))
        self._wait(refs, f"starting the replacement of actor {i}", starting=True)
        if self.weight_updater is not None and hasattr(self.weight_updater, "remote_collectors"):
            self.weight_updater.remote_collectors = self._actors
        for scheme in (self._weight_sync_schemes or {}).values():
            scheme.init_on_sender("policy", model=self.policy, remote_collectors=self._actors)
        return actor

    def _get(self, ref: Any, i: int) -> tuple[bool, Any]:
        """``(True, batch)``, or ``(False, None)`` when actor ``i`` died and was replaced."""
        try:
            return True, self._ray.get(ref, timeout=self.timeout)
        except self._ray.exceptions.RayActorError as err:
            self._replace(i, err)
            return False, None
        except self._ray.exceptions.GetTimeoutError as err:
            raise TimeoutError(f"RayCollector: collector actor {i} sent no batch within {self.timeout}s") from err

    # ------------------------------------------------------------------ iteration
    def _finish(self, batch: TensorDictBase | None) -> TensorDictBase | None:
        self.collected_frames += self._per_actor * (self.num_collectors if self.sync else 1) if batch is None \
            else batch.numel()
        if batch is None:
            return None
        if self.split_trajs:
            batch = split_trajectories(batch, prefix="collector")
        if self.postproc is not None:
            batch = self.postproc(batch)
        if self.replay_buffer is not None:
            self.replay_buffer.extend(batch)
            return None
        return batch

    def _sync_batch(self) -> TensorDictBase | None:
        refs = {i: a.next.remote() for i, a in enumerate(self._actors)}
        out: dict[int, Any] = {}
        while refs:
            ready, _ = self._ray.wait(list(refs.values()), num_returns=len(refs), timeout=self.timeout)
            if not ready:
                raise TimeoutError(f"RayCollector: actors {sorted(refs)} sent no batch within {self.timeout}s")
            for i, ref in list(refs.items()):
                if ref in ready:
                    ok, batch = self._get(refs.pop(i), i)
                    if ok:
                        out[i] = batch
                    else:
                        refs[i] = self._actors[i].next.remote()
        batches = [out[i] for i in range(self.num_collectors)]
        return None if batches[0] is None else torch.stack(batches, 0)

    def iterator(self) -> Iterator[TensorDictBase | None]:
        while self.total_frames < 0 or self.collected_frames < self.total_frames:
            if not self._actors:
                raise RuntimeError("RayCollector was shut down")
            if self.sync:
                self._auto_update(None)
                yield self._finish(self._sync_batch())
                continue
            for i, actor in enumerate(self._actors):
                if i not in self._pending.values():
                    self._pending[actor.next.remote()] = i
            ready, _ = self._ray.wait(list(self._pending), num_returns=1, timeout=self.timeout)
            if not ready:
                raise TimeoutError(f"RayCollector: no actor sent a batch within {self.timeout}s")
            i = self._pending.pop(ready[0])
            ok, batch = self._get(ready[0], i)
            if not ok:
                continue
            yield self._finish(batch)
            self._auto_update(i)  # after the learner used the batch, before this actor's next one

    def _auto_update(self, worker_ids: int | None) -> None:
        if self.policy is not None and (self.update_after_each_batch or self.max_weight_update_interval > -1):
            self.update_policy_weights_(worker_ids=worker_ids)

    # ------------------------------------------------------------------ weights, seeds, state
    def update_policy_weights_(self, policy_or_weights: Any = None, *, worker_ids: Any = None, **kwargs: Any) -> None:
        """Sends weights (the local policy's when ``None``) to every actor (or ``worker_ids``).

        Args:
            policy_or_weights: a module, a TensorDict of weights or a state_dict.
            worker_ids: one actor index or a list (all when ``None``).
            **kwargs: TorchRL's other options (``model_id``), unused.
        """
        if self.weight_updater is not None:
            source = self.policy_weights if policy_or_weights is None else policy_or_weights
            self.weight_updater.push_weights(policy_or_weights, worker_ids)
            if source is not None:
                self._last_weights = put_weights(source)
        else:
            source = self.policy if policy_or_weights is None else policy_or_weights
            if source is None:
                raise ValueError("RayCollector has no local policy: pass the weights to send")
            self._last_weights = put_weights(self._weight_sync_schemes["policy"].prepare_weights(source))
            self._weight_sync_schemes["policy"].send(self._last_weights, worker_ids=worker_ids)
        self.increment_version()

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        for actor in self._actors:
            seed = self._wait([actor.set_seed.remote(seed, static_seed)], "set_seed")[0]
        return seed

    def state_dict(self) -> dict[str, Any]:
        states = self._wait([actor.state_dict.remote() for actor in self._actors], "state_dict")
        return {"frames": self.collected_frames, "policy_version": self._policy_version,
                **{f"collector{i}": s for i, s in enumerate(states)}}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self.collected_frames = int(state_dict.get("frames", 0))
        if state_dict.get("policy_version") is not None and self._policy_version is not None:
            self._policy_version = int(state_dict["policy_version"])
        self._wait([actor.load_state_dict.remote(state_dict[f"collector{i}"])
                    for i, actor in enumerate(self._actors) if f"collector{i}" in state_dict], "load_state_dict")

    def shutdown(self, timeout: float | None = None, shutdown_ray: bool = False) -> None:
        """Stops every actor (their collectors are shut down first, within ``timeout`` seconds).

        Args:
            timeout: seconds given to the actors' own shutdown (10 when ``None``).
            shutdown_ray: also shut Ray down (otherwise only a Ray instance this collector started is).
        """
        actors, self._actors = getattr(self, "_actors", []), []
        lease = getattr(self, "_lease", None)
        if lease is None:
            return
        ray = lease.ray
        if actors and ray.is_initialized():
            refs = [a.shutdown.remote() for a in actors]
            try:
                ray.wait(refs, num_returns=len(refs), timeout=10 if timeout is None else timeout)
            except Exception:  # noqa: BLE001 - dead actors
                pass
            for actor in actors:
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # noqa: BLE001 - the actor may be gone already
                    pass
        for scheme in (getattr(self, "_weight_sync_schemes", None) or {}).values():
            scheme.shutdown()
        self._pending = {}
        lease.release()
        if shutdown_ray and ray.is_initialized():
            ray.shutdown()

    def __repr__(self) -> str:
        return (f"RayCollector(num_collectors={self.num_collectors}, sync={self.sync}, "
                f"frames_per_batch={self.frames_per_batch}, collected_frames={self.collected_frames})")
