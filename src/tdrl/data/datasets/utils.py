"""``load_dataset`` / ``register_dataset``: datasets named ``"<source>:<dataset-id>"``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Union

from tdrl.data.datasets.common import BaseDatasetExperienceReplay

__all__ = ["load_dataset", "register_dataset"]

DatasetFactory = Callable[..., BaseDatasetExperienceReplay]
DatasetFactorySpec = Union[str, DatasetFactory]

_REGISTRY: dict[str, DatasetFactorySpec] = {}


def _prefix(prefix: str) -> str:
    if not isinstance(prefix, str):
        raise TypeError(f"a dataset source prefix must be a str, got {type(prefix).__name__}.")
    normalized = prefix.strip().lower()
    if not normalized or ":" in normalized:
        raise ValueError(f"a dataset source prefix must be non-empty and hold no ':', got {prefix!r}.")
    return normalized


def _split_import_string(spec: str) -> tuple[str, str]:
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"a dataset given as a string must read 'module:attribute', got {spec!r}.")
    return module, attr


def register_dataset(prefix: str, dataset: DatasetFactorySpec, *, replace: bool = False) -> None:
    """Registers a dataset factory under ``prefix`` for :func:`load_dataset`.

    ``load_dataset("<prefix>:<id>", **kwargs)`` then calls ``dataset("<id>", **kwargs)``. Prefixes are
    case-insensitive.

    Args:
        prefix: the source name, without ``":"``.
        dataset: a callable, or a ``"module:attribute"`` string imported on first use.
        replace: overwrite an existing registration (else a ``KeyError``).

    Examples:
        >>> class Toy:
        ...     def __init__(self, dataset_id, **kwargs):
        ...         self.dataset_id, self.kwargs = dataset_id, kwargs
        >>> register_dataset("toy", Toy, replace=True)
        >>> ds = load_dataset("toy:tiny-v0", batch_size=4)
        >>> ds.dataset_id, ds.kwargs
        ('tiny-v0', {'batch_size': 4})
    """
    key = _prefix(prefix)
    if isinstance(dataset, str):
        _split_import_string(dataset)
    elif not callable(dataset):
        raise TypeError(
            f"dataset must be a callable or a 'module:attribute' string, got {type(dataset).__name__}."
        )
    if key in _REGISTRY and not replace:
        raise KeyError(f"dataset source {key!r} is already registered; pass replace=True to overwrite it.")
    _REGISTRY[key] = dataset


def load_dataset(dataset_id: str, **kwargs: Any) -> BaseDatasetExperienceReplay:
    """Builds the dataset named ``"<source>:<dataset-id>"`` with the factory registered for ``source``.

    Built-in sources: ``"atari"`` (or ``"atari_dqn"``), ``"d4rl"``, ``"minari"`` and ``"openml"`` (plus any
    added with :func:`register_dataset`).

    Args:
        dataset_id: e.g. ``"minari:mujoco/hopper/expert-v0"`` or ``"d4rl:hopper-medium-v2"``.
        **kwargs: passed to the dataset's constructor (``batch_size``, ``root``, ...).

    Returns:
        The dataset.

    Examples:
        >>> sorted(p for p in ("d4rl", "minari", "openml") if p in _REGISTRY)
        ['d4rl', 'minari', 'openml']
        >>> load_dataset("hopper-medium-v2")
        Traceback (most recent call last):
        ...
        ValueError: dataset_id must read '<source>:<dataset-id>', got 'hopper-medium-v2'. Registered sources: ...
    """
    if not isinstance(dataset_id, str) or ":" not in dataset_id:
        raise ValueError(
            f"dataset_id must read '<source>:<dataset-id>', got {dataset_id!r}. "
            f"Registered sources: {sorted(_REGISTRY)}."
        )
    prefix, name = dataset_id.split(":", 1)
    key = _prefix(prefix)
    if key not in _REGISTRY:
        raise ValueError(f"unknown dataset source {key!r}; registered sources: {sorted(_REGISTRY)}.")
    factory = _REGISTRY[key]
    if isinstance(factory, str):
        module, attr = _split_import_string(factory)
        factory = getattr(importlib.import_module(module), attr)
    return factory(name, **kwargs)


for _source, _target in (
    ("atari", "tdrl.data.datasets.atari_dqn:AtariDQNExperienceReplay"),
    ("atari_dqn", "tdrl.data.datasets.atari_dqn:AtariDQNExperienceReplay"),
    ("d4rl", "tdrl.data.datasets.d4rl:D4RLExperienceReplay"),
    ("minari", "tdrl.data.datasets.minari_data:MinariExperienceReplay"),
    ("openml", "tdrl.data.datasets.openml:OpenMLExperienceReplay"),
):
    register_dataset(_source, _target)
