"""Spec layout and fixed-action rollout traces, recorded the same way on tdrl and on TorchRL 0.14.1.

``layout(env)`` lists every spec leaf (class name, shape, dtype, bounds); ``trace(env, actions, seed)``
seeds the env, resets it, then writes each action of ``actions`` (a list of ``{key: tensor}``) and calls
``step_and_maybe_reset``, recording every leaf of each step's ``"next"`` and of the next root (but its stale ``"action"``). The golden
files of ``tests/envs/custom`` and ``tests/envs/libs`` hold these dicts for TorchRL; tests compare tdrl's.
"""

from __future__ import annotations

from typing import Any

import torch

_SPECS = ("full_observation_spec", "full_action_spec", "full_reward_spec", "full_done_spec", "full_state_spec")


def layout(env: Any) -> dict[str, tuple]:
    out: dict[str, tuple] = {"batch_size": tuple(env.batch_size)}
    for name in _SPECS:
        for key, leaf in getattr(env, name).items(True, True):
            entry: tuple = (type(leaf).__name__, tuple(leaf.shape), str(leaf.dtype))
            low = getattr(getattr(leaf, "space", None), "low", None)
            if type(leaf).__name__.startswith("Bounded") and low is not None:
                entry += (leaf.space.low.tolist(), leaf.space.high.tolist())
            n = getattr(getattr(leaf, "space", None), "n", None)
            if n is not None:
                entry += (int(n),)
            out[f"{name}:{key}"] = entry
    return out


def _leaves(td: Any, prefix: str) -> dict[str, torch.Tensor]:
    out = {}
    for key, value in td.items(True, True):
        if isinstance(value, torch.Tensor):
            out[f"{prefix}{key}"] = value.detach().clone()
    return out


def trace(env: Any, actions: list[dict[Any, torch.Tensor]], seed: int | None = 0, reset_td: Any = None) -> dict:
    if seed is not None:
        env.set_seed(seed)
    td = env.reset() if reset_td is None else env.reset(reset_td)
    records = [_leaves(td, "")]
    for action in actions:
        for key, value in action.items():
            td.set(key, value.clone())
        out, td = env.step_and_maybe_reset(td)
        rec = _leaves(out.get("next"), "next:")
        rec.update(_leaves(td, "root:"))
        # The root "action" is stale input the next step overwrites; after a partial reset TorchRL zeroes it
        # in reset rows of some envs, tdrl keeps it.
        rec.pop("root:action", None)
        records.append(rec)
    return {"layout": layout(env), "steps": records}


def assert_same_trace(mine: dict, ref: dict) -> None:
    assert mine["layout"] == ref["layout"]
    assert len(mine["steps"]) == len(ref["steps"])
    for i, (a, b) in enumerate(zip(mine["steps"], ref["steps"], strict=True)):
        assert sorted(a) == sorted(b), f"step {i}: keys {sorted(set(a) ^ set(b))} differ"
        for key, value in b.items():
            torch.testing.assert_close(a[key], value, msg=f"step {i}: {key}")
