"""Collector helpers: ``split_trajectories``."""

from __future__ import annotations

# Lives in layer 0 so that offline datasets (tdrl.data.datasets, split_trajs=True) share it.
from tdrl._utils.trajectories import split_trajectories

__all__ = ["split_trajectories"]
