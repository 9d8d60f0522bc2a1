"""Environments implemented in tdrl itself (pure torch)."""

from tdrl.envs.custom.llm import LLMHashingEnv
from tdrl.envs.custom.pendulum import PendulumEnv
from tdrl.envs.custom.tictactoeenv import TicTacToeEnv

__all__ = ["LLMHashingEnv", "PendulumEnv", "TicTacToeEnv"]
