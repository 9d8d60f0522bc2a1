"""``RayReplayBuffer``: a replay buffer living in a Ray actor (the ``distributed`` extra), as TorchRL's.

The buffer (any :class:`~tdrl.data.ReplayBuffer` class, built from the given arguments inside the actor)
is reached through clients: :meth:`RayReplayBuffer.client` returns a picklable handle that remote
collectors use to ``extend`` it directly, while the learner samples it and updates priorities through
the owner object. Every call waits at most ``timeout`` seconds, so a dead or stuck actor raises instead of
hanging the learner.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl._utils.optional_ray import RayLease
from tdrl.data.replay_buffers.replay_buffers import ReplayBuffer

__all__ = ["RayReplayBuffer", "RayReplayBufferClient"]

#: ``ray.remote`` options of the buffer actor when none are given
DEFAULT_BUFFER_REMOTE_CONFIG: dict[str, Any] = {"num_cpus": 0}


class _BufferActor:
    """What the Ray actor holds: one replay buffer; every public method is reached through :meth:`call`."""

    def __init__(self, cls: type, args: tuple, kwargs: dict) -> None:
        self.rb = cls(*args, **kwargs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.rb, name)(*args, **kwargs)

    def attr(self, name: str) -> Any:
        return getattr(self.rb, name)

    def set_attr(self, name: str, value: Any) -> None:
        setattr(self.rb, name, value)


def _to_cpu(value: Any) -> Any:
    return value.to("cpu") if isinstance(value, (torch.Tensor, TensorDictBase)) else value


class RayReplayBufferClient:
    """A picklable handle on a :class:`RayReplayBuffer`'s actor: extend, sample, update priorities.

    It holds no lifecycle rights (it cannot close the actor). Obtained from :meth:`RayReplayBuffer.client`.

    Args:
        actor: the buffer actor's handle.
        has_gpu: the actor has a GPU (data is sent as is; otherwise it is moved to CPU first).
        timeout: seconds each call may take before ``TimeoutError`` (``None``: no limit).
    """

    def __init__(self, actor: Any, *, has_gpu: bool = False, timeout: float | None = 300.0) -> None:
        self._actor = actor
        self.has_gpu = has_gpu
        self.timeout = timeout

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        ray = RayLease.module()
        if not self.has_gpu:
            args = tuple(_to_cpu(a) for a in args)
            kwargs = {k: _to_cpu(v) for k, v in kwargs.items()}
        ref = self._actor.call.remote(name, *args, **kwargs)
        try:
            return ray.get(ref, timeout=self.timeout)
        except ray.exceptions.GetTimeoutError as err:
            raise TimeoutError(f"RayReplayBuffer.{name} took more than {self.timeout}s (the buffer actor is "
                               "busy or stuck); raise `timeout` if this is expected") from err
        except ray.exceptions.RayActorError as err:
            raise RuntimeError(f"RayReplayBuffer.{name}: the buffer actor died: {err}") from err

    def extend(self, data: Any, **kwargs: Any) -> torch.Tensor:
        """Writes ``data`` (a batch) into the remote buffer; returns the written indices."""
        return self._call("extend", data, **kwargs)

    def add(self, data: Any) -> Any:
        """Writes one element; returns its index."""
        return self._call("add", data)

    def sample(self, batch_size: int | None = None, return_info: bool = False) -> Any:
        """A sample drawn by the remote sampler (``batch_size`` defaults to the buffer's)."""
        return self._call("sample", batch_size, return_info=return_info)

    def update_priority(self, index: int | torch.Tensor, priority: float | torch.Tensor) -> None:
        """Sets the priorities of ``index`` in the remote (prioritized) sampler."""
        self._call("update_priority", index, priority)

    def update_tensordict_priority(self, data: TensorDictBase) -> None:
        """Updates priorities from a sampled TensorDict's ``"index"`` and priority key."""
        self._call("update_tensordict_priority", data)

    def __len__(self) -> int:
        return int(self._call("__len__"))

    def __getitem__(self, index: Any) -> Any:
        return self._call("__getitem__", index)

    def _attr(self, name: str) -> Any:
        return RayLease.module().get(self._actor.attr.remote(name), timeout=self.timeout)

    @property
    def write_count(self) -> int:
        """Elements written so far (all writers together)."""
        return int(self._attr("write_count"))

    @property
    def batch_size(self) -> int | None:
        """The remote buffer's default sample size."""
        return self._attr("batch_size")

    def state_dict(self) -> dict[str, Any]:
        """The remote buffer's state (storage, sampler, writer)."""
        return self._call("state_dict")

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores :meth:`state_dict` into the remote buffer."""
        self._call("load_state_dict", state_dict)

    def dumps(self, path: Any, **kwargs: Any) -> None:
        """Saves the remote buffer under ``path`` (a path the actor's machine can write)."""
        self._call("dumps", str(path), **kwargs)

    def loads(self, path: Any, **kwargs: Any) -> None:
        """Loads a buffer saved by :meth:`dumps` from ``path`` (read on the actor's machine)."""
        self._call("loads", str(path), **kwargs)

    def empty(self, empty_write_count: bool = True) -> None:
        """Empties the remote buffer."""
        self._call("empty", empty_write_count=empty_write_count)

    def __iter__(self) -> Iterator[Any]:
        while len(self) > 0:
            yield self.sample()


class RayReplayBuffer(ReplayBuffer):
    """A replay buffer held by a Ray actor: remote collectors extend it, the learner samples it.

    The writer, sampler and storage are built inside the actor from the keyword arguments (instances are
    copied there; constructors such as ``functools.partial(LazyTensorStorage, 1000)`` work too).

    Keyword Args:
        replay_buffer_cls: the buffer class built in the actor (:class:`~tdrl.data.ReplayBuffer`).
        ray_init_config: keyword arguments of ``ray.init`` when Ray is not running yet.
        remote_config: ``ray.remote`` options of the actor (``{"num_cpus": 0}``).
        timeout: seconds a call may take before ``TimeoutError`` (tdrl's addition; ``None``: no limit).
        **kwargs: arguments of ``replay_buffer_cls`` (``storage``, ``sampler``, ``batch_size``, ...).

    Examples:
        >>> RayReplayBuffer.__name__  # starting Ray takes seconds: see docs/distributed.md
        'RayReplayBuffer'
    """

    def __init__(
        self,
        *args: Any,
        replay_buffer_cls: type[ReplayBuffer] = ReplayBuffer,
        ray_init_config: dict[str, Any] | None = None,
        remote_config: dict[str, Any] | None = None,
        timeout: float | None = 300.0,
        **kwargs: Any,
    ) -> None:
        # No ReplayBuffer.__init__: the storage, sampler and writer live in the actor.
        if not (isinstance(replay_buffer_cls, type) and issubclass(replay_buffer_cls, ReplayBuffer)):
            raise TypeError(f"replay_buffer_cls must be a ReplayBuffer subclass, got {replay_buffer_cls!r}")
        self._lease = RayLease("RayReplayBuffer", ray_init_config)
        ray = self._lease.ray
        config = dict(DEFAULT_BUFFER_REMOTE_CONFIG if remote_config is None else remote_config)
        self.has_gpu = bool(config.get("num_gpus") or 0)
        self.timeout = timeout
        self._rb = ray.remote(**config)(_BufferActor).remote(replay_buffer_cls, args, kwargs)
        self._client = RayReplayBufferClient(self._rb, has_gpu=self.has_gpu, timeout=timeout)
        try:
            self._client._attr("batch_size")  # surfaces a constructor error here, not at the first extend
        except BaseException:
            self.close()
            raise

    @property
    def service_backend(self) -> str:
        """Where the buffer runs: ``"ray"``."""
        return "ray"

    @property
    def is_alive(self) -> bool:
        """Whether the actor is still owned (not closed)."""
        return getattr(self, "_rb", None) is not None

    def client(self) -> RayReplayBufferClient:
        """A picklable client for remote writers and readers (it cannot close the buffer)."""
        if not self.is_alive:
            raise RuntimeError("RayReplayBuffer is closed")
        return RayReplayBufferClient(self._rb, has_gpu=self.has_gpu, timeout=self.timeout)

    def clients(self, num_clients: int) -> list[RayReplayBufferClient]:
        """One client per concurrent writer (``num_clients >= 1``)."""
        if isinstance(num_clients, bool) or not isinstance(num_clients, int) or num_clients < 1:
            raise ValueError(f"num_clients must be a positive int, got {num_clients!r}")
        return [self.client() for _ in range(num_clients)]

    def _live(self) -> RayReplayBufferClient:
        if not self.is_alive:
            raise RuntimeError("RayReplayBuffer is closed")
        return self._client

    def extend(self, data: Any, **kwargs: Any) -> torch.Tensor:
        return self._live().extend(data, **kwargs)

    def add(self, data: Any) -> Any:
        return self._live().add(data)

    def sample(self, batch_size: int | None = None, return_info: bool = False) -> Any:
        return self._live().sample(batch_size, return_info=return_info)

    def update_priority(self, index: int | torch.Tensor, priority: float | torch.Tensor) -> None:
        self._live().update_priority(index, priority)

    def update_tensordict_priority(self, data: TensorDictBase) -> None:
        """Updates priorities from a sampled TensorDict (its ``"index"`` and priority key)."""
        self._live().update_tensordict_priority(data)

    def __len__(self) -> int:
        return len(self._live())

    def __getitem__(self, index: Any) -> Any:
        return self._live()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._live())

    @property
    def write_count(self) -> int:
        return self._live().write_count

    @property
    def batch_size(self) -> int | None:
        return self._live().batch_size

    @batch_size.setter
    def batch_size(self, value: int | None) -> None:
        RayLease.module().get(self._rb.set_attr.remote("batch_size", value), timeout=self.timeout)

    def empty(self, empty_write_count: bool = True) -> None:
        self._live().empty(empty_write_count)

    def state_dict(self) -> dict[str, Any]:
        return self._live().state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._live().load_state_dict(state_dict)

    def dumps(self, path: Any, **kwargs: Any) -> None:
        self._live().dumps(path, **kwargs)

    def loads(self, path: Any, **kwargs: Any) -> None:
        self._live().loads(path, **kwargs)

    def dump(self, path: Any, **kwargs: Any) -> None:
        self.dumps(path, **kwargs)

    def load(self, path: Any, **kwargs: Any) -> None:
        self.loads(path, **kwargs)

    def close(self) -> None:
        """Kills the buffer actor (its data is lost) and releases this hold on Ray; idempotent."""
        actor, self._rb = getattr(self, "_rb", None), None
        lease = getattr(self, "_lease", None)
        if actor is not None and lease is not None and lease.ray.is_initialized():
            try:
                lease.ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - the actor may be gone already
                pass
        if lease is not None:
            lease.release()

    def shutdown(self, timeout: float | None = None) -> None:
        """Same as :meth:`close`."""
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("a RayReplayBuffer owns its actor and cannot be pickled: send buffer.client() instead")

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"RayReplayBuffer(alive={self.is_alive})"
