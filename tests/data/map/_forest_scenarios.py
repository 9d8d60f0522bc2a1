"""Rollout scenarios for the MCTSForest golden test, and a backend-neutral description of the trees they build.

Shared by ``record_map_golden.py`` (run with TorchRL 0.14.1) and ``test_tree.py`` (run with tdrl): both build
the same rollouts, feed them to their ``MCTSForest`` and describe the resulting trees with :func:`describe`,
which only calls the public ``Tree`` API. Hash values are left out (they depend on ``PYTHONHASHSEED``, and
TorchRL pairs sorted hashes with children, see docs/differences.md); ``len(forest)`` too (TorchRL counts
overwrites).
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict


def _step(obs: Any, action: Any, next_obs: Any, **extra: Any) -> TensorDict:
    nxt = TensorDict({"observation": torch.as_tensor(next_obs), **extra}, batch_size=[len(next_obs)])
    return TensorDict(
        {"observation": torch.as_tensor(obs), "action": torch.as_tensor(action), "next": nxt},
        batch_size=[len(obs)],
    )


def _chain(root: int, pairs: list[tuple[int, int]]) -> TensorDict:
    obs = [root] + [o for _, o in pairs[:-1]]
    return _step(obs, [a for a, _ in pairs], [o for _, o in pairs])


def docstring_rollouts() -> tuple[list[tuple[str, TensorDict]], TensorDict]:
    """TorchRL's ``to_string`` example: seven rollouts of scalar observations, added one step at a time."""
    data = [
        [(3, 123), (1, 456)],
        [(2, 359), (2, 3094)],
        [(3, 123), (9, 392), (6, 989), (20, 809), (21, 847)],
        [(1, 75)],
        [(3, 123), (0, 948)],
        [(2, 359), (2, 3094), (10, 68)],
        [(2, 359), (2, 3094), (11, 9045)],
    ]
    calls = []
    for rollout in data:
        obs = 0
        for action, nxt in rollout:
            calls.append(("extend", _step([obs], [action], [nxt])))
            obs = nxt
    return calls, TensorDict({"observation": torch.tensor(0)})


def branching_rollouts() -> tuple[list[tuple[str, TensorDict]], TensorDict]:
    """Two whole rollouts sharing their first two steps, the second added twice."""
    r0 = _chain(0, [(1, 123), (2, 392), (3, 989), (4, 809), (5, 847)])
    r1 = _chain(0, [(1, 123), (2, 392), (6, 235), (7, 38)])
    return [("extend", r0), ("extend", r1), ("extend", r1)], r0[0].exclude("next")


def rejoining_rollouts() -> tuple[list[tuple[str, TensorDict]], TensorDict]:
    """Two actions from the root lead to the same observation, which then branches (a shared vertex)."""
    r0 = _chain(0, [(1, 5), (3, 7)])
    r1 = _chain(0, [(2, 5), (4, 8)])
    r2 = _chain(0, [(1, 5), (4, 8), (9, 11)])
    return [("extend", r0), ("extend", r1), ("extend", r2)], r0[0].exclude("next")


def vector_rollouts(n_features: int) -> tuple[list[tuple[str, TensorDict]], TensorDict]:
    """Float observations (``n_features`` > 16 uses RandomProjectionHash), done flags, three branching rollouts."""
    gen = torch.Generator().manual_seed(3)
    states = torch.randn(12, n_features, generator=gen)

    def rollout(ids: list[int], actions: list[int]) -> TensorDict:
        done = torch.zeros(len(actions), 1, dtype=torch.bool)
        done[-1] = True
        return _step(states[ids[:-1]], actions, states[ids[1:]], done=done, reward=torch.arange(len(actions),
                     dtype=torch.float32).unsqueeze(-1))

    calls = [
        ("extend", rollout([0, 1, 2, 3, 4], [0, 1, 0, 1])),
        ("extend", rollout([0, 1, 2, 5, 6], [0, 1, 1, 0])),
        ("extend", rollout([0, 7, 8], [1, 1])),
        ("extend", rollout([0, 1, 2, 5, 9, 10], [0, 1, 1, 1, 0])),
    ]
    return calls, TensorDict({"observation": states[0]})


SCENARIOS = {
    "docstring": docstring_rollouts,
    "branching": branching_rollouts,
    "rejoining": rejoining_rollouts,
    "vector4": lambda: vector_rollouts(4),
    "vector20": lambda: vector_rollouts(20),
}


def _plain(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.tolist()
    return x


def _rollout_actions(tree: Any, path: tuple[int, ...]) -> Any:
    # A vertex shared by several parents stacks one rollout per parent: both libraries cannot cat those.
    try:
        return _plain(tree.rollout_from_path(path)["action"])
    except RuntimeError as err:
        return f"RuntimeError: {str(err).splitlines()[0]}"


def describe(tree: Any, *, full: bool = True) -> dict[str, Any]:
    """What a user reads from a tree, as JSON-able values (no hashes); ``full=False``: structure only."""
    vertices = {}
    for path, v in tree.vertices(key_type="path").items():
        rollout = v.rollout
        entry: dict[str, Any] = {
            "node_id": _plain(v.node_id),
            "num_children": v.num_children,
            "node_observation": _plain(v.node_data["observation"]),
            "rollout_shape": None if rollout is None else list(rollout.batch_size),
        }
        if rollout is not None:
            entry["actions"] = _plain(rollout["action"])
            entry["observations"] = _plain(rollout["observation"])
            entry["next_observations"] = _plain(rollout["next", "observation"])
            if ("next", "done") in rollout.keys(True):
                entry["is_terminal"] = _plain(v.is_terminal)
            entry["branching_action"] = _plain(v.branching_action)
            entry["prev_action"] = _plain(v.prev_action)
        vertices[str(path)] = entry if full else entry["node_id"]
    paths = list(tree.valid_paths())
    return {
        "valid_paths": [list(p) for p in paths],
        "edges": [list(e) for e in tree.edges()],
        "num_vertices": tree.num_vertices(),
        "max_length": tree.max_length(),
        "to_string": tree.to_string(),
        "vertices": vertices,
        "rollout_from_path": [_rollout_actions(tree, p) for p in paths],
        "selected_actions_root": None if tree.subtree is None else _plain(tree.selected_actions),
    }


def build(forest_cls: Any, name: str) -> tuple[Any, TensorDict]:
    """Feeds scenario ``name`` to a new ``forest_cls()``; returns the forest and the scenario's root."""
    forest = forest_cls()
    calls, root = SCENARIOS[name]()
    for method, data in calls:
        getattr(forest, method)(data.clone())
    return forest, root


def describe_scenario(forest_cls: Any, name: str) -> dict[str, Any]:
    """The trees of scenario ``name``: compact, expanded (``compact=False``) and cut at ``max_depth=1``."""
    forest, root = build(forest_cls, name)
    return {
        "compact": describe(forest.get_tree(root)),
        "expanded": describe(forest.get_tree(root, compact=False), full=False),
        "max_depth_1": describe(forest.get_tree(root, max_depth=1)),
        "node_map_len": len(forest.node_map),
    }
