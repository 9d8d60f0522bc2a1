"""TorchRL's ``trainers.helpers.collectors``: collectors over ``num_collectors`` groups of env constructors."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from tdrl.collectors import BaseCollector, Collector, MultiAsyncCollector, MultiSyncCollector
from tdrl.envs import ParallelEnv

__all__ = ["sync_async_collector", "sync_sync_collector"]


def _split(
    env_fns: Callable | list[Callable],
    env_kwargs: dict | list[dict] | None,
    num_env_per_collector: int | None,
    num_collectors: int | None,
) -> tuple[list[Callable], list[dict | None]]:
    """One env constructor (a ``ParallelEnv`` over its group when it has several) and kwargs per collector."""
    if isinstance(env_fns, (list, tuple)):
        fns = list(env_fns)
        if num_env_per_collector is None:
            if not num_collectors:
                raise ValueError("pass num_env_per_collector or num_collectors with a list of env constructors")
            num_env_per_collector = -(len(fns) // -num_collectors)
        if num_collectors is None:
            num_collectors = -(len(fns) // -num_env_per_collector)
        elif num_env_per_collector * num_collectors < len(fns):
            raise ValueError(
                f"num_env_per_collector * num_collectors={num_env_per_collector * num_collectors} is less than "
                f"the {len(fns)} env constructors given"
            )
    else:
        if num_env_per_collector is None or num_collectors is None:
            raise ValueError(
                "a single env constructor needs both num_env_per_collector and num_collectors, got "
                f"num_env_per_collector={num_env_per_collector}, num_collectors={num_collectors}"
            )
        fns = [env_fns] * (num_env_per_collector * num_collectors)
    kwargs = list(env_kwargs) if isinstance(env_kwargs, (list, tuple)) else [env_kwargs] * len(fns)
    if len(kwargs) != len(fns):
        raise ValueError(f"{len(kwargs)} env_kwargs for {len(fns)} env constructors")
    groups = [range(i, min(i + num_env_per_collector, len(fns))) for i in range(0, len(fns), num_env_per_collector)]
    if len(groups) != num_collectors:
        raise ValueError(f"{len(fns)} env constructors make {len(groups)} groups, not num_collectors={num_collectors}")
    if num_env_per_collector == 1:
        return [fns[g[0]] for g in groups], [kwargs[g[0]] for g in groups]
    parallel = [
        functools.partial(ParallelEnv, len(g), [fns[i] for i in g], create_env_kwargs=[kwargs[i] or {} for i in g])
        for g in groups
    ]
    return parallel, [None] * len(parallel)


def _collector(cls: type[BaseCollector], env_fns: Any, env_kwargs: Any, num_env_per_collector: int | None,
               num_collectors: int | None, **kwargs: Any) -> BaseCollector:
    fns, fn_kwargs = _split(env_fns, env_kwargs, num_env_per_collector, num_collectors)
    if cls is Collector:
        return Collector(fns[0], create_env_kwargs=fn_kwargs[0], **kwargs)
    create_kwargs = [k or {} for k in fn_kwargs]
    return cls(fns, create_env_kwargs=create_kwargs, **kwargs)


def sync_sync_collector(
    env_fns: Callable | list[Callable],
    env_kwargs: dict | list[dict] | None,
    num_env_per_collector: int | None = None,
    num_collectors: int | None = None,
    **kwargs: Any,
) -> Collector | MultiSyncCollector:
    """A :class:`~tdrl.collectors.MultiSyncCollector` over ``num_collectors`` workers (a ``Collector`` for one).

    The env constructors (``env_fns``, or one constructor repeated ``num_env_per_collector * num_collectors``
    times) are split into groups of ``num_env_per_collector``; a group of several runs as a ``ParallelEnv``.
    ``kwargs`` go to the collector (``policy``, ``frames_per_batch``, ``total_frames``, ...).

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> collector = sync_sync_collector(PendulumEnv, None, num_env_per_collector=1, num_collectors=1,
        ...                                 frames_per_batch=4, total_frames=4)
        >>> type(collector).__name__, next(iter(collector)).shape
        ('Collector', torch.Size([4]))
        >>> collector.shutdown()
    """
    cls = Collector if num_collectors == 1 else MultiSyncCollector
    return _collector(cls, env_fns, env_kwargs, num_env_per_collector, num_collectors, **kwargs)  # type: ignore[return-value]


def sync_async_collector(
    env_fns: Callable | list[Callable],
    env_kwargs: dict | list[dict] | None,
    num_env_per_collector: int | None = None,
    num_collectors: int | None = None,
    **kwargs: Any,
) -> MultiAsyncCollector:
    """A :class:`~tdrl.collectors.MultiAsyncCollector` over ``num_collectors`` workers (split as in
    :func:`sync_sync_collector`).

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> collector = sync_async_collector(PendulumEnv, None, num_env_per_collector=1, num_collectors=1,
        ...                                  frames_per_batch=4, total_frames=4)
        >>> type(collector).__name__, next(iter(collector)).shape
        ('MultiAsyncCollector', torch.Size([4]))
        >>> collector.shutdown()
    """
    return _collector(MultiAsyncCollector, env_fns, env_kwargs, num_env_per_collector, num_collectors, **kwargs)  # type: ignore[return-value]
