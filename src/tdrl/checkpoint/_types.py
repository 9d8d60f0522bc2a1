"""Names shared by the checkpoint modules: option literals, ``CheckpointError``, options and load results."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

__all__ = [
    "CheckpointBest",
    "CheckpointError",
    "CheckpointFormat",
    "CheckpointLoadResult",
    "CheckpointMetricMode",
    "CheckpointOptions",
    "CheckpointStrictness",
    "StateDictFormat",
]

CheckpointFormat = Literal["directory", "archive"]
CheckpointStrictness = Literal["error", "warn", "ignore"]
CheckpointMetricMode = Literal["min", "max"]
StateDictFormat = Literal["directory", "torch"]
CheckpointBest = tuple[str, CheckpointMetricMode]


class CheckpointError(RuntimeError):
    """A checkpoint cannot be written or restored (missing component, bad manifest, corrupted file, ...).

    Examples:
        >>> import tempfile
        >>> from tdrl.checkpoint import Checkpoint
        >>> try:
        ...     Checkpoint(progress={"frames": 1}).load(tempfile.mkdtemp() + "/absent")
        ... except CheckpointError as err:
        ...     print(type(err).__name__, isinstance(err, RuntimeError))
        CheckpointError True
    """


@dataclasses.dataclass(frozen=True)
class CheckpointOptions:
    """Extra positional/keyword arguments handed to a component's adapter on save and on load.

    Examples:
        >>> base = CheckpointOptions(save_kwargs={"a": 1})
        >>> base.merged(CheckpointOptions(save_kwargs={"b": 2})).save_kwargs
        {'a': 1, 'b': 2}
    """

    save_args: tuple[Any, ...] | None = None
    save_kwargs: Mapping[str, Any] | None = None
    load_args: tuple[Any, ...] | None = None
    load_kwargs: Mapping[str, Any] | None = None

    def merged(self, other: CheckpointOptions | None) -> CheckpointOptions:
        """These options overridden by ``other``'s (keyword arguments are merged, ``other`` winning)."""
        if other is None:
            return self
        return CheckpointOptions(
            save_args=other.save_args if other.save_args is not None else self.save_args,
            save_kwargs={**(self.save_kwargs or {}), **(other.save_kwargs or {})},
            load_args=other.load_args if other.load_args is not None else self.load_args,
            load_kwargs={**(self.load_kwargs or {}), **(other.load_kwargs or {})},
        )


@dataclasses.dataclass
class CheckpointLoadResult:
    """What :meth:`Checkpoint.load` did.

    Attributes:
        loaded: components restored.
        missing: requested components the checkpoint does not hold.
        incompatible: ``{name: reason}`` for components whose adapter or version does not match.
        unrequested: components in the checkpoint that were not restored (not registered or not asked for).
        values: the loaded value of JSON components (plain data has no object to restore into).
        manifest: the checkpoint's manifest.
        comparison: the library versions of the checkpoint against the running ones.

    Examples:
        >>> import tempfile
        >>> from tdrl.checkpoint import Checkpoint
        >>> path = Checkpoint(progress={"frames": 10}).save(tempfile.mkdtemp() + "/ckpt")
        >>> result = Checkpoint(progress={}, strict="ignore").load(path, components=["progress", "optimizer"])
        >>> sorted(result.loaded), sorted(result.missing), result.values["progress"]
        (['progress'], ['optimizer'], {'frames': 10})
    """

    loaded: set[str] = dataclasses.field(default_factory=set)
    missing: set[str] = dataclasses.field(default_factory=set)
    incompatible: dict[str, str] = dataclasses.field(default_factory=dict)
    unrequested: set[str] = dataclasses.field(default_factory=set)
    values: dict[str, Any] = dataclasses.field(default_factory=dict)
    manifest: dict[str, Any] = dataclasses.field(default_factory=dict)
    comparison: dict[str, Any] = dataclasses.field(default_factory=dict)
