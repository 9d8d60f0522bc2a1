"""``PolicyVersion``: tags every reset/step with the version of the policy that produced the data."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import torch
from tensordict import NonTensorData, TensorDictBase

from tdrl.data import Composite, NonTensor, Unbounded
from tdrl.envs.transforms import Transform

__all__ = ["PolicyVersion", "VersionChange"]


@dataclass
class VersionChange:
    """One version bump: when, from which version, to which."""

    timestamp: datetime
    old_version: str | int | None
    new_version: str | int


class PolicyVersion(Transform):
    """Writes ``"policy_version"`` (an int64 count, or a UUID string) into every reset and step.

    Call ``increment_version()`` after each weight update (a collector does it when tracking versions), so
    stored data tells which policy generated it (e.g. to drop stale samples in asynchronous training).

    Args:
        version_type: ``int``/``"int"`` (0, 1, 2, ...) or ``str``/``"uuid"`` (a fresh UUID per version).

    Examples:
        >>> from tensordict import TensorDict
        >>> t = PolicyVersion()
        >>> t.increment_version()
        >>> t._step(None, TensorDict(batch_size=[2]))["policy_version"]
        tensor([1, 1])
    """

    def __init__(self, version_type: type | Literal["uuid", "int"] = int) -> None:
        if version_type not in (int, "int", str, "uuid"):
            raise ValueError(f"PolicyVersion: version_type must be int/'int' or str/'uuid', got {version_type!r}")
        super().__init__()
        self.version_type = version_type
        self.version_history: list[VersionChange] = []
        self._current_version: str | int | None = None
        self._bump(init=True)

    @property
    def _is_int(self) -> bool:
        return self.version_type in (int, "int")

    @property
    def version(self) -> str | int:
        return self._current_version

    @version.setter
    def version(self, value: str | int) -> None:
        self._current_version = value

    def increment_version(self) -> None:
        """Moves to the next version (recorded in ``version_history``)."""
        self._bump(init=False)

    def _bump(self, init: bool) -> str | int:
        old = self._current_version
        if self._is_int:
            self._current_version = 0 if init else int(old) + 1
        else:
            self._current_version = str(uuid.uuid4())
        self.version_history.append(VersionChange(datetime.now(), old, self._current_version))
        return self._current_version

    def _step(self, tensordict: TensorDictBase | None, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self._is_int:
            value = torch.full(next_tensordict.shape, int(self.version), dtype=torch.int64, device=next_tensordict.device)
        else:
            value = NonTensorData(self.version).expand(next_tensordict.shape)
        next_tensordict.set("policy_version", value)
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._step(None, tensordict_reset)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._step(None, tensordict)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        if self._is_int:
            spec = Unbounded(shape=observation_spec.shape, dtype=torch.int64, device=observation_spec.device)
        else:
            spec = NonTensor(shape=observation_spec.shape, example_data=str(uuid.uuid4()), device=observation_spec.device)
        observation_spec["policy_version"] = spec
        return observation_spec
