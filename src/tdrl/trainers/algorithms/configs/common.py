"""Base class and small helpers shared by every Hydra structured config."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, ListConfig
from tensordict.utils import NestedKey

from tdrl.trainers.algorithms.configs.safe_targets import safe_instantiate as instantiate

__all__ = ["ConfigBase", "build", "normalize_key", "normalize_keys"]


@dataclass
class ConfigBase:
    """Root of all tdrl structured configs: a dataclass whose ``_target_`` names what it builds.

    Subclasses declare one field per accepted argument of their target, so Hydra can merge YAML onto them
    and :func:`~tdrl.trainers.algorithms.configs.validate_config` can check keys before anything is built.

    Examples:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class LinearConfig(ConfigBase):
        ...     in_features: int = 2
        ...     out_features: int = 3
        ...     _target_: str = "torch.nn.Linear"
        >>> build(LinearConfig()).out_features
        3
    """

    def __post_init__(self) -> None:
        """Hook for subclasses that fill derived defaults."""


def normalize_key(key: Any) -> NestedKey:
    """Turns a YAML list into a nested key: ``[agents, action]`` -> ``("agents", "action")``, ``[a]`` -> ``"a"``.

    Examples:
        >>> normalize_key(["agents", "action"]), normalize_key(["action"]), normalize_key("done")
        (('agents', 'action'), 'action', 'done')
    """
    if isinstance(key, (list, tuple, ListConfig)):
        key = tuple(key)
        return key[0] if len(key) == 1 else key
    return key


def normalize_keys(keys: Sequence[Any] | None) -> list[NestedKey] | None:
    """Applies :func:`normalize_key` to each element (``[[next, reward]]`` is one nested key).

    Examples:
        >>> normalize_keys(["observation", ["next", "reward"]])
        ['observation', ('next', 'reward')]
    """
    if keys is None:
        return None
    if isinstance(keys, str):
        return [keys]
    return [normalize_key(k) for k in keys]


def build(obj: Any, **kwargs: Any) -> Any:
    """Materializes ``obj``: a config (``_target_``) is instantiated, a partial is called, anything else is returned.

    Examples:
        >>> import functools
        >>> build(functools.partial(dict, a=1), b=2)
        {'a': 1, 'b': 2}
        >>> build(3)
        3
    """
    if isinstance(obj, (DictConfig, dict)) and "_target_" in obj:
        return instantiate(obj, **kwargs)
    if hasattr(obj, "_target_") and not isinstance(obj, type):
        return instantiate(obj, **kwargs)
    if isinstance(obj, functools.partial):
        return obj(**kwargs)
    return obj
