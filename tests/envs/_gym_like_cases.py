"""A gym-like library env and its ``GymLikeEnv`` subclass, built the same way on tdrl and TorchRL 0.14.1.

``build(envs, data, name)`` defines the subclass on ``envs.GymLikeEnv`` with ``data``'s spec classes
(``tdrl.envs``/``tdrl.data`` or ``torchrl.envs``/``torchrl.data``); ``run`` traces it with
``_golden_trace.trace`` (recorded for TorchRL by ``record_torchrl_gym_like.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))

from _golden_trace import trace  # noqa: E402


class Walker:
    """A library env on a line: action 0/1/2 moves by -1/0/+1; ends past |3| or after 6 steps."""

    def reset(self, **kwargs: Any) -> tuple[dict, dict]:
        self.pos, self.t = 0.0, 0
        return self._obs(), {"dist": np.float64(0.0)}

    def _obs(self) -> dict:
        return {"position": np.array([self.pos, -self.pos], np.float32), "steps": np.array([self.t], np.int64)}

    def step(self, action: Any) -> tuple:
        self.t += 1
        self.pos += float(action) - 1.0
        terminated, truncated = abs(self.pos) >= 3, self.t >= 6
        return self._obs(), self.pos * 0.5, terminated, truncated, {"dist": np.float64(abs(self.pos))}


def _subclass(envs: Any, data: Any) -> type:
    class WalkerEnv(envs.GymLikeEnv):
        def _check_kwargs(self, kwargs: dict) -> None:
            pass

        def _build_env(self, env: Any = None, **kwargs: Any) -> Any:
            return env

        def _init_env(self) -> None:
            pass

        def _make_specs(self, env: Any) -> None:
            self.observation_spec = data.Composite(
                position=data.Unbounded((2,), dtype=torch.float32), steps=data.Unbounded((1,), dtype=torch.int64)
            )
            self.action_spec = data.Categorical(3)
            self.reward_spec = data.Unbounded((1,))
            flag = data.Categorical(2, (1,), dtype=torch.bool)
            self.done_spec = data.Composite(done=flag, terminated=flag.clone(), truncated=flag.clone())

        def _output_transform(self, out: tuple) -> tuple:
            obs, reward, terminated, truncated, info = out
            return obs, reward, terminated, truncated, terminated or truncated, info

        def _reset_output_transform(self, out: tuple) -> tuple:
            return out

        def _set_seed(self, seed: int | None) -> None:
            pass

    return WalkerEnv


def build(envs: Any, data: Any, name: str) -> Any:
    cls = _subclass(envs, data)
    if name == "walker_frame_skip":
        return cls(env=Walker(), frame_skip=2)
    env = cls(env=Walker())
    if name == "walker_info":
        env.set_info_dict_reader(envs.default_info_dict_reader(["dist"], spec=[data.Unbounded((1,), dtype=torch.float64)]))
    return env


CASES = {
    "walker": [2, 2, 0, 2, 2, 2, 1, 0, 0, 0, 0, 1],
    "walker_frame_skip": [2, 0, 2, 2, 1, 1],
    "walker_info": [0, 0, 0, 2, 1],
}


def run(envs: Any, data: Any, name: str) -> dict:
    actions = [{"action": torch.tensor(a)} for a in CASES[name]]
    return trace(build(envs, data, name), actions, seed=None)
