"""Wrappers of third-party environment libraries (gymnasium, dm_control)."""

from tdrl.envs.libs.dm_control import DMControlEnv, DMControlWrapper

__all__ = ["DMControlEnv", "DMControlWrapper"]
