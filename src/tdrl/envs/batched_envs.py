"""TorchRL's ``torchrl.envs.batched_envs`` import path: ``SerialEnv``, ``ParallelEnv``, ``BatchedEnvBase``."""

from tdrl.envs.batched import BatchedEnvBase, ParallelEnv, SerialEnv

__all__ = ["BatchedEnvBase", "ParallelEnv", "SerialEnv"]
