"""Offline datasets as replay buffers (``torchrl.data.datasets``), read from local files."""

from tdrl.data.datasets.atari_dqn import AtariDQNExperienceReplay
from tdrl.data.datasets.common import BaseDatasetExperienceReplay
from tdrl.data.datasets.d4rl import D4RLExperienceReplay
from tdrl.data.datasets.minari_data import MinariExperienceReplay
from tdrl.data.datasets.openml import OpenMLExperienceReplay
from tdrl.data.datasets.utils import load_dataset, register_dataset

__all__ = [
    "AtariDQNExperienceReplay",
    "BaseDatasetExperienceReplay",
    "D4RLExperienceReplay",
    "MinariExperienceReplay",
    "OpenMLExperienceReplay",
    "load_dataset",
    "register_dataset",
]
