"""Shared helpers of the collector tests: small envs and policies that make collector behaviour visible."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time

import torch
from tensordict.nn import TensorDictModule

from tdrl.envs import ExplorationType, GymEnv, PendulumEnv, exploration_type


def pendulum():
    return PendulumEnv()


def gym_pendulum():
    return GymEnv("Pendulum-v1")


def cartpole():
    return GymEnv("CartPole-v1")


def linear_policy() -> TensorDictModule:
    """Pendulum observation (3) -> action (1), a linear map: zeroed weights give zero actions."""
    torch.manual_seed(0)
    return TensorDictModule(torch.nn.Linear(3, 1), in_keys=["observation"], out_keys=["action"])


class LockedPolicy(torch.nn.Module):
    """A policy that cannot be pickled (it holds a lock and a lambda): only a policy_factory can ship it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)
        self.lock = threading.Lock()
        self.scale = lambda x: x

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        with self.lock:
            return self.scale(self.lin(obs))


def locked_policy_factory() -> TensorDictModule:
    return TensorDictModule(LockedPolicy(), in_keys=["observation"], out_keys=["action"])


class ExplorationProbe(torch.nn.Module):
    """Action +1 under DETERMINISTIC exploration, -1 otherwise."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        value = 1.0 if exploration_type() == ExplorationType.DETERMINISTIC else -1.0
        return torch.full((*obs.shape[:-1], 1), value)


def live_children() -> list[int]:
    """Pids of this process's live multiprocessing children."""
    return [p.pid for p in mp.active_children()]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def wait_gone(pids: list[int], timeout: float = 10.0) -> bool:
    """Whether every process in ``pids`` is gone (or a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(pid_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False
