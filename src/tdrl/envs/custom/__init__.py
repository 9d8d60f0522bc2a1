"""Environments implemented in tdrl itself (pure torch)."""

from tdrl.envs.custom.pendulum import PendulumEnv
from tdrl.envs.custom.tictactoeenv import TicTacToeEnv

__all__ = ["PendulumEnv", "TicTacToeEnv"]
