"""Wrappers of third-party environment libraries (gymnasium, dm_control, VMAS)."""

from tdrl.envs.libs.dm_control import DMControlEnv, DMControlWrapper
from tdrl.envs.libs.gym import GymEnv, GymWrapper, gym_backend, register_gym_spec_conversion, set_gym_backend
from tdrl.envs.libs.vmas import VmasEnv, VmasWrapper

__all__ = [
    "DMControlEnv",
    "DMControlWrapper",
    "GymEnv",
    "GymWrapper",
    "gym_backend",
    "register_gym_spec_conversion",
    "set_gym_backend",
    "VmasEnv",
    "VmasWrapper",
]
