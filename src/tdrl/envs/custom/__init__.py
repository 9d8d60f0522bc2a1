"""Environments implemented in tdrl itself (pure torch)."""

from tdrl.envs.custom.pendulum import PendulumEnv

__all__ = ["PendulumEnv"]
