"""Environments implemented in tdrl itself (pure torch)."""

from tdrl.envs.custom.llm import LLMHashingEnv
from tdrl.envs.custom.pendulum import PendulumEnv

__all__ = ["LLMHashingEnv", "PendulumEnv"]
