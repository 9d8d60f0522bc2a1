"""VMAS scenarios built identically with TorchRL 0.14.1's and tdrl's ``VmasEnv`` (``lib`` is either
``torchrl.envs.libs.vmas`` or ``tdrl.envs.libs.vmas``), for golden checks of specs and rollouts.

Recorded by ``record_torchrl_vmas.py`` (TorchRL interpreter), checked by ``test_vmas.py``. Nothing here imports
either library.
"""

from __future__ import annotations

from typing import Any

import torch

CASES: dict[str, dict[str, Any]] = {
    "navigation": {"scenario": "navigation", "num_envs": 3, "max_steps": 4, "n_agents": 2},
    "navigation_one_hot": {
        "scenario": "navigation",
        "num_envs": 2,
        "max_steps": 4,
        "n_agents": 2,
        "continuous_actions": False,
        "categorical_actions": False,
    },
    "balance_categorical": {
        "scenario": "balance",
        "num_envs": 2,
        "max_steps": 4,
        "n_agents": 3,
        "continuous_actions": False,
    },
    "simple_tag": {"scenario": "simple_tag", "num_envs": 2, "max_steps": 4},
}


def _action(spec, step: int) -> torch.Tensor:
    """A deterministic action of ``spec`` that changes with ``step``."""
    if spec.dtype.is_floating_point:
        return (torch.linspace(-1.0, 1.0, spec.shape.numel()).reshape(spec.shape) * (step + 1) / 6).clamp(
            spec.space.low, spec.space.high
        )
    n = spec.space.n
    index = (torch.arange(spec.shape.numel() if spec.shape[-1] != n else spec.shape[:-1].numel()) + step) % n
    if spec.shape[-1] == n and type(spec).__name__ == "OneHot":
        return torch.nn.functional.one_hot(index, n).reshape(spec.shape).to(spec.dtype)
    return index.reshape(spec.shape).to(spec.dtype)


def trace(lib: Any, name: str) -> dict[str, Any]:
    """Spec layout (key -> (class, shape, dtype)), group map and a 6-step rollout with fixed actions."""
    env = lib.VmasEnv(seed=0, **CASES[name])
    layout = {}
    for which in ("full_observation_spec", "full_action_spec", "full_reward_spec", "full_done_spec"):
        spec = getattr(env, which)
        for key in spec.keys(True, True):
            leaf = spec[key]
            layout[f"{which}/{'.'.join((key,) if isinstance(key, str) else key)}"] = (
                type(leaf).__name__.replace("Continuous", "").replace("Discrete", ""),
                list(leaf.shape),
                str(leaf.dtype),
            )
    td = env.reset()
    steps = []
    for step in range(6):
        for key in env.full_action_spec.keys(True, True):
            td[key] = _action(env.full_action_spec[key], step)
        td = env.step(td)
        flat = {".".join(k if isinstance(k, tuple) else (k,)): v.clone() for k, v in td.items(True, True)}
        steps.append(flat)
        td = td["next"].clone()
        if td["done"].any():  # a partial reset of the finished envs (the others keep their state)
            td.set("_reset", td["done"].clone())
            td = env.reset(td)
            steps.append(
                {".".join(k if isinstance(k, tuple) else (k,)): v.clone() for k, v in td.items(True, True)}
            )
    return {"group_map": dict(env.group_map), "layout": layout, "steps": steps}
