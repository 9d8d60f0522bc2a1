"""Config for a :class:`~tdrl.data.StorageEnsemble` (TorchRL's ``StorageEnsembleConfig``; not a ConfigStore entry)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import MISSING

from tdrl.data import StorageEnsemble
from tdrl.trainers.algorithms.configs.common import ConfigBase, build

__all__ = ["StorageEnsembleConfig", "make_storage_ensemble"]


@dataclass
class StorageEnsembleConfig(ConfigBase):
    """A :class:`~tdrl.data.StorageEnsemble` of ``storages`` (a list of storage configs).

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.data import LazyTensorStorageConfig
        >>> ensemble = instantiate(StorageEnsembleConfig(
        ...     storages=[LazyTensorStorageConfig(max_size=4), LazyTensorStorageConfig(max_size=6)]))
        >>> len(ensemble)
        2
    """

    _partial_: bool = False
    storages: Any = MISSING
    transforms: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.data_ensemble.make_storage_ensemble"


def make_storage_ensemble(storages: Sequence[Any], transforms: Sequence[Any] | None = None) -> StorageEnsemble:
    """Builds a :class:`~tdrl.data.StorageEnsemble` from a list of storages (or storage configs).

    Examples:
        >>> from tdrl.data import LazyTensorStorage
        >>> type(make_storage_ensemble([LazyTensorStorage(3), LazyTensorStorage(3)])).__name__
        'StorageEnsemble'
    """
    if isinstance(storages, str) or not isinstance(storages, Sequence):
        raise TypeError(f"storage_ensemble.storages must be a list of storages, got {type(storages).__name__}")
    built = [build(s) for s in storages]
    return StorageEnsemble(*built, transforms=None if transforms is None else [build(t) for t in transforms])


# TorchRL's private factory name, so that a TorchRL YAML's ``_target_`` resolves after the import swap.
_make_storage_ensemble = make_storage_ensemble
