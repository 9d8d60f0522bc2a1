"""Wrappers of third-party environment libraries (gymnasium, MO-Gymnasium, dm_control, PettingZoo, VMAS, ...)."""

from tdrl.envs.libs.dm_control import DMControlEnv, DMControlWrapper
from tdrl.envs.libs.envpool import MultiThreadedEnv, MultiThreadedEnvWrapper
from tdrl.envs.libs.gym import GymEnv, GymWrapper, gym_backend, register_gym_spec_conversion, set_gym_backend
from tdrl.envs.libs.lbforaging import LBForagingEnv, LBForagingWrapper
from tdrl.envs.libs.mo_gym import MOGymEnv, MOGymWrapper
from tdrl.envs.libs.pettingzoo import PettingZooEnv, PettingZooWrapper
from tdrl.envs.libs.vmas import VmasEnv, VmasWrapper

__all__ = [
    "DMControlEnv",
    "DMControlWrapper",
    "GymEnv",
    "GymWrapper",
    "gym_backend",
    "register_gym_spec_conversion",
    "set_gym_backend",
    "LBForagingEnv",
    "LBForagingWrapper",
    "MOGymEnv",
    "MultiThreadedEnv",
    "MultiThreadedEnvWrapper",
    "MOGymWrapper",
    "PettingZooEnv",
    "PettingZooWrapper",
    "VmasEnv",
    "VmasWrapper",
]
