"""``BaseCollector``: what every collector shares (iteration, length, weights, context-manager use)."""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.collectors._trajectories import TrajectoryAssembler, iter_trajectories

__all__ = ["POLICY_VERSION_KEY", "BaseCollector", "policy_weights"]

POLICY_VERSION_KEY = "policy_version"


def policy_weights(policy: Any) -> TensorDictBase | None:
    """The parameters and buffers of ``policy`` as a TensorDict (``None`` when it has none)."""
    if not isinstance(policy, torch.nn.Module):
        return None
    weights = TensorDict.from_module(policy)
    return weights if not weights.is_empty() else None


class BaseCollector(abc.ABC):
    """Base class of the collectors: iterate to get batches (``for batch in collector``).

    Subclasses implement :meth:`iterator`, :meth:`shutdown`, :meth:`set_seed`, :meth:`state_dict` and
    :meth:`load_state_dict`, and set ``frames_per_batch``, ``total_frames`` and ``requested_frames_per_batch``.

    Examples:
        >>> from tdrl.collectors import Collector
        >>> from tdrl.envs import PendulumEnv
        >>> collector: BaseCollector = Collector(PendulumEnv(), None, frames_per_batch=8, total_frames=16)
        >>> [batch.batch_size for batch in collector]
        [torch.Size([8]), torch.Size([8])]
        >>> collector.shutdown()
    """

    frames_per_batch: int
    requested_frames_per_batch: int
    total_frames: int
    _iterator: Iterator[TensorDictBase | None] | None = None
    _policy_version: int | None = None  # None: versions are not tracked (track_policy_version=False)
    # Whole-trajectory batches (TorchRL's trajs_per_batch); subclasses that support them set these.
    trajs_per_batch: int | None = None
    trajs_per_write: int | None = None
    traj_format: str = "padded"
    _traj_assembler: TrajectoryAssembler | None = None

    def _setup_policy_version(self, track_policy_version: bool) -> None:
        if not isinstance(track_policy_version, bool):
            raise TypeError(
                f"track_policy_version must be a bool (tdrl tracks an int counter), got {track_policy_version!r}"
            )
        self._policy_version = 0 if track_policy_version else None

    @property
    def policy_version(self) -> int | None:
        """How many times :meth:`update_policy_weights_` was called (``None`` unless ``track_policy_version``)."""
        return self._policy_version

    def get_policy_version(self) -> int | None:
        """Same as :attr:`policy_version` (TorchRL's method name)."""
        return self._policy_version

    def increment_version(self) -> None:
        """Bumps the policy version (done by :meth:`update_policy_weights_`); a no-op when untracked."""
        if self._policy_version is not None:
            self._policy_version += 1

    def _stamp_policy_version(self, batch: TensorDictBase, version: int | torch.Tensor | None = None) -> None:
        """Writes ``"policy_version"`` (int64, one per frame) into ``batch`` when versions are tracked."""
        if self._policy_version is None:
            return
        version = self._policy_version if version is None else version
        value = torch.as_tensor(version, dtype=torch.int64)
        value = value.reshape(value.shape + (1,) * (batch.batch_dims - value.ndim)).expand(batch.shape)
        batch.set(POLICY_VERSION_KEY, value.clone())

    @abc.abstractmethod
    def iterator(self) -> Iterator[TensorDictBase | None]:
        """Yields batches until ``total_frames`` frames were collected (forever when it is -1)."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Closes environments and workers; idempotent."""

    @abc.abstractmethod
    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds the environment(s); returns the next seed in the chain."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Plain-data state (counters, env and policy state)."""

    @abc.abstractmethod
    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict`."""

    def __iter__(self) -> Iterator[TensorDictBase | None]:
        if self.trajs_per_batch is None:
            return self.iterator()
        return self._iter_trajectories()

    def _iter_trajectories(self) -> Iterator[TensorDictBase | None]:
        """:meth:`iterator`'s batches regrouped into ``trajs_per_batch`` whole trajectories (or into the buffer)."""
        if self._traj_assembler is None:
            self._traj_assembler = TrajectoryAssembler()
        return iter_trajectories(
            self.iterator(),
            self._traj_assembler,
            self.trajs_per_batch or 1,
            traj_format=self.traj_format,  # type: ignore[arg-type]
            replay_buffer=getattr(self, "replay_buffer", None),
            trajs_per_write=self.trajs_per_write,
            discard_in_flight=bool(getattr(self, "reset_at_each_iter", False)),
        )

    def next(self) -> TensorDictBase | None:
        """One batch from a persistent iterator (``None`` when a replay buffer receives the data)."""
        if self._iterator is None:
            self._iterator = iter(self)
        try:
            return next(self._iterator)
        except StopIteration:
            self._iterator = None
            return None
        except BaseException:
            self._iterator = None  # a failed generator is finished: the next call starts (and checks) anew
            raise

    def __len__(self) -> int:
        if self.total_frames is None or self.total_frames < 0:
            raise RuntimeError("an endless collector (total_frames=-1) has no length")
        return -(-self.total_frames // self.requested_frames_per_batch)

    def __enter__(self) -> BaseCollector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __del__(self) -> None:
        try:
            self.shutdown()
        except Exception:  # noqa: BLE001 - interpreter shutdown or half-built collector
            pass
