"""What each :class:`~tdrl.collectors.distributed.RayCollector` actor runs: one collector and its iterator.

A plain class: ``ray.remote`` wraps it in the parent process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl._utils.optional_ray import RayLease
from tdrl.collectors._base import POLICY_VERSION_KEY

__all__ = ["CollectorActor"]

_TRAJ_KEY = ("collector", "traj_ids")


class CollectorActor:
    """One collector (``collector_class(*args, **kwargs)``) inside a Ray actor.

    Trajectory ids are made unique across actors (``id * num + idx``); with ``track_policy_version`` every
    batch carries the number of weight updates this actor applied before collecting it.

    Args:
        collector_class: the collector built in the actor.
        idx: this actor's index; num: the number of actors.
        args / kwargs: the collector's arguments.
        pre_collect_hook: called before each batch; post_collect_hook: called with each batch.
        track_policy_version: write ``"policy_version"`` into each batch.
    """

    def __init__(
        self,
        collector_class: type,
        idx: int,
        num: int,
        args: tuple,
        kwargs: dict,
        *,
        pre_collect_hook: Callable[[], None] | None = None,
        post_collect_hook: Callable[[TensorDictBase], None] | None = None,
        track_policy_version: bool = False,
    ) -> None:
        self.collector = collector_class(*args, **kwargs)
        self.iterator = iter(self.collector)
        self.idx, self.num = idx, num
        self.pre_collect_hook, self.post_collect_hook = pre_collect_hook, post_collect_hook
        self.track_policy_version = track_policy_version
        self.version = 0

    def next(self) -> TensorDictBase | None:
        """The next batch (``None`` when the collector writes into a replay buffer)."""
        if self.pre_collect_hook is not None:
            self.pre_collect_hook()
        batch = next(self.iterator)
        if batch is None:
            return None
        ids = batch.get(_TRAJ_KEY, None)
        if ids is not None:
            batch.set(_TRAJ_KEY, ids * self.num + self.idx)
        if self.track_policy_version:
            batch.set(POLICY_VERSION_KEY, torch.full(batch.shape, self.version, dtype=torch.int64))
        if self.post_collect_hook is not None:
            self.post_collect_hook(batch)
        return batch

    def update_policy_weights_(self, weights: Any = None, **kwargs: Any) -> int:
        """Loads ``weights`` into the collector's policy; returns this actor's policy version."""
        self.collector.update_policy_weights_(weights)
        self.version += 1
        return self.version

    def set_policy_version(self, version: int) -> None:
        """Sets the version (a replacement actor takes over the one it replaces)."""
        self.version = int(version)

    def policy_weights(self) -> TensorDictBase | None:
        """A copy of the policy's weights (for checks)."""
        policy = getattr(self.collector, "policy", None)
        if not isinstance(policy, torch.nn.Module):
            return None
        return TensorDict.from_module(policy).detach().clone()

    def pid(self) -> int:
        """The actor's process id (tests kill it to exercise fault handling)."""
        return os.getpid()

    def node_id(self) -> str:
        """The Ray node this actor runs on."""
        return RayLease.module().get_runtime_context().get_node_id()

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        torch.manual_seed(seed)
        out = self.collector.set_seed(seed, static_seed)
        return seed + 1 if out is None else out

    def state_dict(self) -> dict[str, Any]:
        return {"collector": self.collector.state_dict(), "policy_version": self.version}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if "collector" in state:
            self.collector.load_state_dict(state["collector"])
            self.version = int(state.get("policy_version", self.version))
        else:
            self.collector.load_state_dict(state)

    def shutdown(self) -> None:
        self.collector.shutdown()
