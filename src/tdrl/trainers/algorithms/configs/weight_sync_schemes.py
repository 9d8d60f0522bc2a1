"""TorchRL's parent configs of the ``weight_sync_scheme`` and ``weight_updater`` groups.

Both targets are abstract classes (as in TorchRL), so neither is registered as a ``base`` entry; the concrete
configs (:mod:`.weight_update`) take their fields.
"""

from __future__ import annotations

from dataclasses import dataclass

from tdrl.trainers.algorithms.configs.common import ConfigBase

__all__ = ["WeightSyncSchemeConfig", "WeightUpdaterConfig"]


@dataclass
class WeightSyncSchemeConfig(ConfigBase):
    """Fields every :class:`~tdrl.weight_update.WeightSyncScheme` config has (``strategy``).

    Examples:
        >>> WeightSyncSchemeConfig().strategy
        'tensordict'
    """

    _partial_: bool = False
    strategy: str = "tensordict"
    _target_: str = "tdrl.weight_update.WeightSyncScheme"


@dataclass
class WeightUpdaterConfig(ConfigBase):
    """Parent of weight-updater configs: a partial completed with the weights (as TorchRL's).

    Examples:
        >>> cfg = WeightUpdaterConfig()
        >>> cfg._target_, cfg._partial_
        ('tdrl.weight_update.WeightUpdaterBase', True)
    """

    _partial_: bool = True
    _target_: str = "tdrl.weight_update.WeightUpdaterBase"
