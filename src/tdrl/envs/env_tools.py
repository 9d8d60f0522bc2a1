"""Small env helpers from TorchRL's ``torchrl.envs`` namespace: ``make_tensordict``, ``get_available_libraries``."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

__all__ = ["get_available_libraries", "make_tensordict"]


def make_tensordict(
    env: Any, policy: Callable[[TensorDictBase], TensorDictBase] | None = None
) -> TensorDictBase:
    """A zero-filled tensordict with every entry of one full step (reset, action, step) of ``env``.

    Args:
        env: the environment.
        policy: writes the action (default: a random action from the action spec).

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> td = make_tensordict(PendulumEnv())
        >>> sorted(td["next"].keys())[:3], float(td["next", "reward"].abs().sum())
        (['done', 'params', 'reward'], 0.0)
    """
    with torch.no_grad():
        tensordict = env.reset()
        if policy is not None:
            tensordict.update(policy(tensordict))
        else:
            tensordict.set("action", env.action_spec.rand())
        return env.step(tensordict).zero_()


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def get_available_libraries() -> dict[str, bool | None]:
    """Which of TorchRL's historical env libraries are importable here (TorchRL's dict and keys).

    Examples:
        >>> sorted(get_available_libraries())
        ['dm_control', 'gym', 'gym-super-mario-bros', 'gym[atari]', 'habitat']
    """
    gym = _installed("gym")
    return {
        "gym": gym,
        "gym[atari]": gym and _installed("atari_py"),
        "dm_control": _installed("dm_control"),
        "habitat": _installed("habitat_sim") or None,
        "gym-super-mario-bros": _installed("gym_super_mario_bros"),
    }
