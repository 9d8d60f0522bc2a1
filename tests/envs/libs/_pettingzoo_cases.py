"""PettingZoo cases traced the same way on tdrl and on TorchRL 0.14.1 (``record_torchrl_pettingzoo.py``).

``trace(lib, name)`` builds the case with ``lib.PettingZooWrapper`` (``lib`` is ``tdrl.envs.libs.pettingzoo``
or ``torchrl.envs.libs.pettingzoo``), records its group map and spec layout, then steps it with a deterministic
policy (the first allowed action of each agent, or ``(step + agent) % n``) through ``step_and_maybe_reset``,
recording every leaf of each step's output and the action specs' masks. ``LeavingAgents`` is a small parallel
env written here: agents leave at set steps, its action masks come in the infos, it has a global state.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from pettingzoo import ParallelEnv


class LeavingAgents(ParallelEnv):
    """Three agents on a counter; ``agent_2`` leaves after step 2, ``agent_0`` after step 4, episode of 6."""

    metadata = {"name": "leaving_agents_v0"}

    def __init__(self, horizon: int = 6) -> None:
        self.possible_agents = ["agent_0", "agent_1", "agent_2"]
        self.horizon = horizon
        self.state_space = spaces.Box(-100.0, 100.0, (4,), np.float32)

    @functools.cache  # noqa: B019  (PettingZoo's idiom: one space object per agent)
    def observation_space(self, agent: str) -> spaces.Space:
        return spaces.Box(-10.0, 10.0, (2,), np.float32)

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> spaces.Space:
        return spaces.Discrete(3)

    def _obs(self, agent: str) -> np.ndarray:
        i = self.possible_agents.index(agent)
        return np.array([self.t, i + 0.5 * self.total], np.float32)

    def _info(self, agent: str) -> dict:
        i = self.possible_agents.index(agent)
        mask = np.ones(3, np.int8)
        mask[(self.t + i) % 3] = 0
        return {"action_mask": mask, "score": float(self.total + i)}

    def state(self) -> np.ndarray:
        return np.array([self.t, self.total, len(self.agents), 1.0], np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents = list(self.possible_agents)
        self.t, self.total = 0, float(seed or 0) % 5
        return {a: self._obs(a) for a in self.agents}, {a: self._info(a) for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        self.t += 1
        self.total += sum(int(actions[a]) for a in self.agents)
        leaving = {2: "agent_2", 4: "agent_0"}.get(self.t)
        rewards = {a: float(actions[a]) - 1.0 for a in self.agents}
        terminations = {a: a == leaving for a in self.agents}
        truncations = {a: self.t >= self.horizon for a in self.agents}
        obs = {a: self._obs(a) for a in self.agents}
        infos = {a: self._info(a) for a in self.agents}
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return obs, rewards, terminations, truncations, infos


def _pz(family: str, task: str, parallel: bool, **kwargs: Any) -> Any:
    module = importlib.import_module(f"pettingzoo.{family}.{task}")
    return module.parallel_env(**kwargs) if parallel else module.env(**kwargs)


# name -> (env factory, wrapper kwargs (group_map given by name of a MarlGroupMapType member), steps)
CASES: dict[str, tuple[Any, dict[str, Any], int]] = {
    "tictactoe_aec": (lambda: _pz("classic", "tictactoe_v3", False), {"use_mask": True, "seed": 0}, 14),
    "tictactoe_onehot_one_group": (
        lambda: _pz("classic", "tictactoe_v3", False),
        {"use_mask": True, "seed": 1, "categorical_actions": False, "group_map": "ALL_IN_ONE_GROUP",
         "done_on_any": True},
        8,
    ),
    "connect_four_aec": (lambda: _pz("classic", "connect_four_v3", False), {"use_mask": True, "seed": 0}, 10),
    "rps_parallel": (lambda: _pz("classic", "rps_v2", True, max_cycles=4), {"seed": 0}, 9),
    "pursuit_per_agent_onehot": (
        lambda: _pz("sisl", "pursuit_v5", True, max_cycles=5, n_pursuers=3, n_evaders=2, x_size=8, y_size=8),
        {"seed": 0, "group_map": "ONE_GROUP_PER_AGENT", "categorical_actions": False},
        7,
    ),
    "kaz_mask": (
        lambda: _pz("butterfly", "knights_archers_zombies_v11", True, max_cycles=6),
        {"seed": 0, "use_mask": True},
        8,
    ),
    "leaving_agents": (LeavingAgents, {"seed": 3, "use_mask": True, "return_state": True}, 8),
    "leaving_agents_all_done": (
        LeavingAgents,
        {"seed": 1, "use_mask": True, "done_on_any": False,
         "group_map": {"left": ["agent_0", "agent_2"], "right": ["agent_1"]}},
        8,
    ),
}


def build(lib: Any, name: str) -> Any:
    factory, kwargs, _ = CASES[name]
    kwargs = dict(kwargs)
    if isinstance(kwargs.get("group_map"), str):
        marl = importlib.import_module(lib.__name__.split(".")[0] + ".envs")
        kwargs["group_map"] = getattr(marl.MarlGroupMapType, kwargs["group_map"])
    return lib.PettingZooWrapper(factory(), **kwargs)


def _policy(env: Any, td: Any, step: int) -> None:
    for group in env.group_map:
        spec = env.full_action_spec[group, "action"]
        n_agents = spec.shape[0]
        one_hot = spec.shape[-1] != n_agents or spec.ndim > 1
        n = spec.shape[-1] if one_hot else int(spec.space.n)
        mask = td.get((group, "action_mask"), None)
        index = torch.tensor([(step + i) % n for i in range(n_agents)])
        if mask is not None:
            index = mask.long().argmax(-1)  # the first allowed action
        action = torch.nn.functional.one_hot(index, n) if one_hot else index
        td.set((group, "action"), action.to(spec.dtype))


def _layout(env: Any) -> dict[str, tuple]:
    out = {}
    for prefix, spec in (("obs", env.full_observation_spec), ("act", env.full_action_spec),
                         ("rew", env.full_reward_spec), ("done", env.full_done_spec)):
        for key, leaf in spec.items(True, True):
            out[f"{prefix}:{key}"] = (type(leaf).__name__, tuple(leaf.shape), str(leaf.dtype))
    return out


def trace(lib: Any, name: str) -> dict[str, Any]:
    env = build(lib, name)
    steps = CASES[name][2]
    td = env.reset()
    records = [{str(k): v.clone() for k, v in td.items(True, True)}]
    for t in range(steps):
        _policy(env, td, t)
        out, td = env.step_and_maybe_reset(td)
        rec = {str(k): v.clone() for k, v in out.get("next").items(True, True)}
        rec.update({f"root:{k}": v.clone() for k, v in td.items(True, True)})
        for group in env.group_map:
            mask = getattr(env.full_action_spec[group, "action"], "mask", None)
            if mask is not None:
                rec[f"spec_mask:{group}"] = mask.clone()
        records.append(rec)
    return {"group_map": {k: list(v) for k, v in env.group_map.items()}, "layout": _layout(env), "steps": records}
