"""Wrapped-library cases traced the same way on tdrl and TorchRL 0.14.1 (``record_torchrl_extra_libs.py``).

``run(libs, name)`` builds the case from ``libs`` (``tdrl.envs.libs`` or ``torchrl.envs.libs``) and traces it
with ``tests/envs/_golden_trace.py``: a fixed action sequence after a seeded reset. Each case names the
package it needs (``REQUIRES``), so the test skips the cases whose library is not installed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parents[1]))

from _golden_trace import trace  # noqa: E402


def _onehot(cells: list[int], n: int) -> list[dict[str, torch.Tensor]]:
    return [{"action": torch.nn.functional.one_hot(torch.tensor(c), n)} for c in cells]


def _box(values: list[float]) -> list[dict[str, torch.Tensor]]:
    return [{"action": torch.tensor([v], dtype=torch.float32)} for v in values]


def _short_foraging(L: Any) -> Any:
    from lbforaging.foraging.environment import ForagingEnv

    env = ForagingEnv(players=2, min_player_level=1, max_player_level=2, min_food_level=1, max_food_level=None,
                      field_size=(5, 5), max_num_food=1, sight=5, max_episode_steps=4, force_coop=False)
    return L.LBForagingWrapper(env, seed=3)


def _agents(pairs: list[tuple[int, int]], n: int | None = None) -> list[dict]:
    out = []
    for pair in pairs:
        action = torch.tensor(pair)
        out.append({("agents", "action"): action if n is None else torch.nn.functional.one_hot(action, n)})
    return out


# name -> (builder taking the libs module, actions, required package)
CASES: dict[str, tuple[Any, list, str]] = {
    "mo_deep_sea_treasure": (
        lambda L: L.MOGymEnv("deep-sea-treasure-v0"),
        _onehot([1, 1, 3, 1, 1, 3, 3, 1, 0, 2], 4),
        "mo_gymnasium",
    ),
    "mo_mountaincar_continuous_frame_skip": (
        lambda L: L.MOGymEnv("mo-mountaincarcontinuous-v0", frame_skip=2),
        _box([1.0, -0.5, 0.25, 1.0, -1.0, 0.0]),
        "mo_gymnasium",
    ),
    "lbforaging_8x8": (
        lambda L: L.LBForagingEnv("Foraging-8x8-2p-1f-v3", seed=0),
        _agents([(1, 2), (3, 4), (5, 5), (0, 1), (2, 3), (4, 1), (1, 1), (2, 2)]),
        "lbforaging",
    ),
    "lbforaging_onehot": (
        lambda L: L.LBForagingEnv("Foraging-5x5-2p-1f-coop-v3", seed=1, categorical_actions=False),
        _agents([(1, 2), (3, 4), (5, 5), (0, 1), (2, 3)], n=6),
        "lbforaging",
    ),
    "lbforaging_time_limit": (
        _short_foraging,
        _agents([(0, 0), (1, 2), (0, 0), (0, 0), (3, 4), (1, 1)]),
        "lbforaging",
    ),
}

REQUIRES = {name: case[2] for name, case in CASES.items()}


def run(libs: Any, name: str) -> dict:
    build, actions, _ = CASES[name]
    return trace(build(libs), actions, seed=0)
