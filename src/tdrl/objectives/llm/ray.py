"""``RayMCAdvantage``: :class:`~tdrl.objectives.llm.MCAdvantage` whose group queues live in a Ray actor
(the ``distributed`` extra), so several writers (replay buffers in different processes) share one grouping state.
"""

from __future__ import annotations

from typing import Any, Literal

from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl._utils.optional_ray import RayLease
from tdrl.envs.transforms import Transform
from tdrl.objectives.llm.mc_advantage import MCAdvantage, MCAdvantageSelector

__all__ = ["RayMCAdvantage"]


class _MCAdvantageActor:
    """What the Ray actor holds: one :class:`MCAdvantage`."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.transform = MCAdvantage(**kwargs)

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        return self.transform.inv(tensordict)

    def call(self, name: str) -> Any:
        return getattr(self.transform, name)()

    def attr(self, name: str) -> Any:
        return getattr(self.transform, name)


class RayMCAdvantage(Transform):
    """:class:`~tdrl.objectives.llm.MCAdvantage` with its queues and counters in a Ray actor: same arguments,
    same outputs; ``inv`` sends the written data to the actor and returns the completed groups (or ``None``).

    Args:
        grpo_size, prompt_key, rewards_key, advantage_key, done_key, verbose: as :class:`MCAdvantage`.

    Keyword Args:
        trajectory_return / keep_return_bounds / candidate_group_size: as :class:`MCAdvantage`, as are
            ``candidate_selection_min_size`` and ``candidate_selector``.
        ray_init_config: ``ray.init`` arguments when Ray is not running.
        remote_config: ``ray.remote`` options of the actor (``{"num_cpus": 1}``).
        actor_name: a named actor: reused when it exists (its owner closes it), created otherwise.
        timeout: seconds a call may take before ``TimeoutError`` (tdrl's addition).

    Examples:
        >>> RayMCAdvantage.__name__  # starting Ray takes seconds: see docs/distributed.md
        'RayMCAdvantage'
    """

    def __init__(
        self,
        grpo_size: int,
        prompt_key: NestedKey = "query",
        rewards_key: NestedKey = ("next", "reward"),
        advantage_key: NestedKey = "advantage",
        done_key: NestedKey = ("next", "done"),
        verbose: bool = False,
        *,
        trajectory_return: Literal["sum", "max", "mean"] | None = None,
        keep_return_bounds: tuple[float, float] | None = None,
        candidate_group_size: int | None = None,
        candidate_selection_min_size: int | None = None,
        candidate_selector: MCAdvantageSelector | None = None,
        ray_init_config: dict[str, Any] | None = None,
        remote_config: dict[str, Any] | None = None,
        actor_name: str | None = None,
        timeout: float | None = 300.0,
    ) -> None:
        kwargs: dict[str, Any] = dict(grpo_size=grpo_size, prompt_key=prompt_key, rewards_key=rewards_key,
                      advantage_key=advantage_key, done_key=done_key, verbose=verbose,
                      trajectory_return=trajectory_return, keep_return_bounds=keep_return_bounds,
                      candidate_group_size=candidate_group_size,
                      candidate_selection_min_size=candidate_selection_min_size, candidate_selector=candidate_selector)
        MCAdvantage(**kwargs)  # bad arguments fail here, before an actor starts
        super().__init__(in_keys=[prompt_key, rewards_key, done_key], out_keys=[advantage_key])
        self.grpo_size, self.timeout = grpo_size, timeout
        self._lease = RayLease("RayMCAdvantage", ray_init_config)
        ray = self._lease.ray
        options = dict({"num_cpus": 1} if remote_config is None else remote_config)
        self._owns_actor = True
        if actor_name is not None:
            try:
                self._actor, self._owns_actor = ray.get_actor(actor_name), False
            except ValueError:
                options["name"] = actor_name
        if self._owns_actor:
            self._actor = ray.remote(**options)(_MCAdvantageActor).remote(kwargs)

    def _get(self, ref: Any) -> Any:
        ray = self._lease.ray
        try:
            return ray.get(ref, timeout=self.timeout)
        except ray.exceptions.GetTimeoutError as err:
            raise TimeoutError(f"RayMCAdvantage: the actor did not answer within {self.timeout}s") from err

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Sampled data passes through unchanged."""
        return tensordict

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase | None:  # type: ignore[override]  # see MCAdvantage.inv
        """Queues the complete trajectories in the actor; returns the groups they completed, or ``None``."""
        if self._actor is None:
            raise RuntimeError("RayMCAdvantage is closed")
        return self._get(self._actor.inv.remote(tensordict))

    def get_stats(self) -> dict[str, float]:
        """The actor's counters (see :meth:`MCAdvantage.get_stats`)."""
        return self._get(self._actor.call.remote("get_stats"))

    def reset_stats(self) -> None:
        """Resets the actor's counters."""
        self._get(self._actor.call.remote("reset_stats"))

    def clear_queues(self) -> None:
        """Forgets the incomplete groups held by the actor."""
        self._get(self._actor.call.remote("clear_queues"))

    @property
    def queued_groups(self) -> int:
        """Incomplete groups held by the actor."""
        return int(self._get(self._actor.attr.remote("queued_groups")))

    @property
    def queued_trajectories(self) -> int:
        """Trajectories of incomplete groups held by the actor."""
        return int(self._get(self._actor.attr.remote("queued_trajectories")))

    def close(self) -> None:
        """Kills the actor when this object created it, and releases the hold on Ray; idempotent."""
        actor, self._actor = getattr(self, "_actor", None), None
        lease = getattr(self, "_lease", None)
        if lease is None:
            return
        if actor is not None and self._owns_actor and lease.ray.is_initialized():
            try:
                lease.ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        lease.release()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
