"""MCTS score cases for the golden test, computed the same way with TorchRL 0.14.1 and with tdrl.

Shared by ``record_mcts_golden.py`` (TorchRL) and ``test_mcts_scores.py`` (tdrl): :func:`compute` takes the
``torchrl.modules`` or ``tdrl.modules`` namespace and returns every score as nested lists (NaN and inf kept).
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict


def _stats(batch: tuple[int, ...], n_actions: int, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    visits = torch.randint(0, 6, (*batch, n_actions), generator=gen).float()
    rewards = torch.rand(*batch, n_actions, generator=gen)
    return {
        "win_count": rewards * visits,
        "visits": visits,
        "total_visits": visits.sum(-1) + 1,
        "sum_squared_rewards": rewards.pow(2) * visits,
        "prior_prob": torch.softmax(torch.randn(*batch, n_actions, generator=gen), -1),
    }


NODES = {
    "single": ((), 4, 0),
    "batched": ((3,), 5, 1),
    "batched_2d": ((2, 2), 3, 2),
}


def _node(name: str, scalar_total: bool = False) -> TensorDict:
    batch, n_actions, seed = NODES[name]
    stats = _stats(batch, n_actions, seed)
    if scalar_total:
        stats["total_visits"] = torch.tensor(17.0)
    return TensorDict(stats, batch_size=() if scalar_total else batch)


def compute(modules: Any) -> dict[str, Any]:
    """Every score case with the ``modules`` namespace (``torchrl.modules`` or ``tdrl.modules``)."""
    out: dict[str, Any] = {}
    scores = {
        "puct": modules.PUCTScore(c=1.3),
        "ucb": modules.UCBScore(c=0.7),
        "ucb1_tuned": modules.UCB1TunedScore(),
        "ucb1_tuned_c1": modules.UCB1TunedScore(exploration_constant=1.0),
        "puct_enum": modules.MCTSScores.PUCT.value(),
        "ucb_enum": modules.MCTSScores.UCB.value(),
    }
    for name in NODES:
        for scalar_total in (False, True):
            for score_name, score in scores.items():
                node = score(_node(name, scalar_total))
                out[f"{score_name}_{name}_{scalar_total}"] = node["score"].tolist()
    custom = modules.PUCTScore(c=2.0, win_count_key=("stats", "w"), visits_key=("stats", "n"),
                               total_visits_key="N", prior_prob_key="p", score_key=("out", "s"))
    node = TensorDict({"stats": {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor([1.0, 4.0])},
                       "N": torch.tensor(5.0), "p": torch.tensor([0.3, 0.7])})
    out["puct_custom_keys"] = custom(node)["out", "s"].tolist()
    out["exp3"] = _exp3(modules)
    return out


def _exp3(modules: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    exp3 = modules.EXP3Score(gamma=0.2)
    node = exp3(TensorDict(num_actions=torch.tensor(3)))
    out["init"] = {"weights": node["weights"].tolist(), "score": node["score"].tolist(),
                   "action_prob": node["action_prob"].tolist()}
    for step, (action, reward) in enumerate([(0, 0.5), (2, 1.0), (0, 0.25)]):
        exp3.update_weights(node, action_idx=action, reward=reward)
        exp3(node)
        out[f"step{step}"] = {"weights": node["weights"].tolist(), "score": node["score"].tolist()}
    batched = modules.MCTSScores.EXP3.value()
    node = batched(TensorDict(weights=torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]),
                              num_actions=torch.tensor([3, 3]), batch_size=[2]))
    out["batched"] = node["score"].tolist()
    batched.update_weights(node, action_idx=1, reward=0.8)
    out["batched_update"] = node["weights"].tolist()
    same_key = modules.EXP3Score(gamma=0.0, score_key="p", action_prob_key="p")
    out["same_key"] = sorted(same_key(TensorDict(weights=torch.tensor([2.0, 6.0]), num_actions=2)).keys())
    return out
