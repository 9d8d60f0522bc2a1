"""MCAdvantage scenarios run identically by the TorchRL recorder and the tdrl golden tests: a sequence of
``inv`` writes, each recorded as ``None`` (nothing written yet) or the written rewards and advantages."""

from __future__ import annotations

import torch
from tensordict import TensorDict


def _traj(group, rewards: list[float], string_group: bool) -> TensorDict:
    T = len(rewards)
    done = torch.zeros(T, 1, dtype=torch.bool)
    done[-1] = True
    td = TensorDict(
        next=TensorDict(reward=torch.tensor(rewards).reshape(T, 1), done=done, batch_size=[T]), batch_size=[T]
    )
    if string_group:
        td["query"] = f"prompt {group}"
    else:
        td["group"] = torch.full((T,), int(group))
    return td


def _writes(name: str) -> list[TensorDict]:
    gen = torch.Generator().manual_seed(3)

    def r(n):
        return torch.rand(n, generator=gen).round(decimals=2).tolist()

    if name == "steps":  # one step per answer, two prompts interleaved, one batched write of two answers
        single = [_traj(g, r(1), True) for g in (0, 1, 0, 1)]
        pair = torch.cat([_traj(0, r(1), True), _traj(1, r(1), True)], 0)
        return [*single, pair]
    if name == "multi_step":  # per-step rewards of 3-step trajectories, tensor group ids
        return [_traj(g, r(3), False) for g in (5, 6, 5, 6)]
    if name == "traj_sum":
        return [_traj(g, r(2), False) for g in (1, 1, 2, 2, 1, 1)]
    if name == "traj_mean_bounds":  # group 1 all fail (dropped), group 2 mixed
        fail = [_traj(1, [0.0, 0.0], False) for _ in range(2)]
        return [*fail, _traj(2, [0.0, 1.0], False), _traj(2, [0.0, 0.0], False)]
    if name == "oversample":  # 4 candidates, keep 2 whose mean return is inside (0.1, 0.9)
        return [_traj(3, [v], False) for v in (0.0, 0.0, 0.0, 1.0)]
    raise KeyError(name)


MC_SCENARIOS: dict[str, dict] = {
    "steps": {"grpo_size": 3},
    "multi_step": {"grpo_size": 2, "prompt_key": "group"},
    "traj_sum": {"grpo_size": 2, "prompt_key": "group", "trajectory_return": "sum"},
    "traj_mean_bounds": {
        "grpo_size": 2, "prompt_key": "group", "trajectory_return": "mean", "keep_return_bounds": (0.1, 0.9),
    },
    "oversample": {
        "grpo_size": 2, "prompt_key": "group", "trajectory_return": "sum", "keep_return_bounds": (0.1, 0.9),
        "candidate_group_size": 4,
    },
}


def run_mc(mc_cls, rb_cls=None, storage_cls=None, name: str = "steps") -> dict:
    """The outputs of each write, and (with a buffer class) the advantages a replay buffer ends up holding."""
    transform = mc_cls(**MC_SCENARIOS[name])
    written = []
    for td in _writes(name):
        out = transform.inv(td)
        written.append(None if out is None else (out["next", "reward"].reshape(-1), out["advantage"].reshape(-1)))
    result = {"written": written}
    if rb_cls is not None:
        rb = rb_cls(storage=storage_cls(100))
        rb.append_transform(mc_cls(**MC_SCENARIOS[name]))
        for td in _writes(name):
            rb.extend(td)
        result["buffer_len"] = len(rb)
    return result
