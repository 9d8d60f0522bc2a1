"""Batched environments: ``SerialEnv`` (in-process) and ``ParallelEnv`` (worker processes)."""

from tdrl.envs.batched._base import BatchedEnvBase
from tdrl.envs.batched._worker import CloudpickleWrapper, recv_command
from tdrl.envs.batched.parallel import ParallelEnv
from tdrl.envs.batched.serial import SerialEnv

__all__ = ["BatchedEnvBase", "CloudpickleWrapper", "ParallelEnv", "SerialEnv", "recv_command"]
