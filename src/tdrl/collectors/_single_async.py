"""``AsyncCollector``: one collector in a background process; batches are ready when they are asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensordict import TensorDictBase

from tdrl.collectors._multi_async import MultiAsyncCollector
from tdrl.envs import EnvBase

__all__ = ["AsyncCollector"]


class AsyncCollector(MultiAsyncCollector):
    """Runs a :class:`~tdrl.collectors.Collector` in a worker process that collects the next batch while the
    caller works on the current one. Takes ``Collector``'s arguments (``create_env_fn`` is one env
    constructor) plus the process options of :class:`~tdrl.collectors.MultiAsyncCollector`.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> collector = AsyncCollector(PendulumEnv, frames_per_batch=10, total_frames=20)
        >>> [batch.shape for batch in collector]
        [torch.Size([10]), torch.Size([10])]
        >>> collector.shutdown()
    """

    def __init__(self, create_env_fn: Callable[..., EnvBase], policy: Any = None, **kwargs: Any) -> None:
        if isinstance(create_env_fn, (list, tuple)):
            raise TypeError("AsyncCollector takes one env constructor; use MultiAsyncCollector for a list")
        if kwargs.get("num_workers", 1) != 1:
            raise ValueError("AsyncCollector runs one worker; use MultiAsyncCollector for more")
        kwargs.pop("num_workers", None)
        # Collector keywords without a multi-process meaning: each batch is a new tensordict anyway.
        kwargs.pop("return_same_td", None)
        self._drop_traj_ids = not kwargs.pop("track_traj_ids", True)
        super().__init__([create_env_fn], policy, **kwargs)

    def _finish(self, batch: TensorDictBase) -> TensorDictBase | None:
        if self._drop_traj_ids:
            batch = batch.exclude(("collector", "traj_ids"))
        return super()._finish(batch)
