"""Tests of ``tdrl.data.map.tree`` (``MCTSForest``) and ``tree_node`` (``Tree``); trees golden against TorchRL 0.14.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import Categorical, Composite, MCTSForest, Tree
from tdrl.data.map import tree as tree_module

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _forest_scenarios import SCENARIOS, build, describe_scenario  # noqa: E402

GOLDEN = json.loads((HERE / "map_torchrl_0_14_1.json").read_text())["forests"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_trees_match_torchrl_golden(name):
    ours = json.loads(json.dumps(describe_scenario(MCTSForest, name)))
    for part in GOLDEN[name]:
        assert ours[part] == GOLDEN[name][part], f"{name}: {part} differs from TorchRL 0.14.1"


def test_child_hash_is_its_own_step_hash():
    # TorchRL sorts the hashes of a node's children apart from the children themselves.
    forest, root = build(MCTSForest, "docstring")
    tree = forest.get_tree(root)
    checked = 0
    for vertex in tree.vertices(key_type="path").values():
        for i in range(vertex.num_children):
            child = vertex.subtree[i]
            step = TensorDict(observation=child.rollout["observation"][..., 0].reshape(1),
                              action=child.rollout["action"][..., 0].reshape(1), batch_size=[1])
            expected = forest.data_map.query_module(step, extend=False)["_hash"].item()
            assert child.hash == expected
            checked += 1
    assert checked == 8


def test_len_counts_distinct_steps():
    forest, _ = build(MCTSForest, "branching")  # 5 steps, then 4 steps sharing 2, added twice
    assert len(forest) == 7
    assert len(forest.node_map) == 6
    visits = forest.node_map[TensorDict(observation=torch.tensor(0))]["count"]
    assert visits.item() == 3  # the root was written by three extends


def test_extend_add_get_child_and_return_node():
    forest = MCTSForest()
    assert len(forest) == 0
    with pytest.raises(RuntimeError, match="empty"):
        forest.get_tree(TensorDict(observation=torch.tensor(0)))
    step = TensorDict(observation=torch.tensor(0), action=torch.tensor(1),
                      next=TensorDict(observation=torch.tensor(5), reward=torch.tensor([1.0])))
    forest.add(step)
    assert len(forest) == 1
    assert forest.get_child(step.exclude("next"))["next", "observation"].item() == 5
    node = forest.extend(TensorDict(observation=torch.tensor([0]), action=torch.tensor([2]),
                                    next=TensorDict(observation=torch.tensor([6]), reward=torch.ones(1, 1),
                                                    batch_size=[1]), batch_size=[1])[0], return_node=True)
    assert isinstance(node, Tree) and node.num_children == 2
    assert node.selected_actions.tolist() == [1, 2]
    with pytest.raises(KeyError, match="not a node"):
        forest.get_tree(TensorDict(observation=torch.tensor(42)))
    with pytest.raises(KeyError, match="'next'"):
        forest.extend(step.exclude("next"))


def test_keys_and_sizes():
    forest = MCTSForest(done_keys="done", action_keys=[("agent", "action")], excluded_keys=["reward"])
    assert forest.done_keys == ["done"] and forest.action_keys == [("agent", "action")]
    assert forest.reward_keys == ["reward"] and forest.observation_keys == ["observation"]
    assert forest.done_keys == ["done"]
    forest = MCTSForest(done_keys="done")
    forest.get_keys_from_env(SimpleNamespace(reward_keys=[("agent", "r")], done_keys=["x"], action_keys=["y"],
                                             observation_keys=["pixels"]))
    assert forest.reward_keys == [("agent", "r")] and forest.done_keys == ["done"]
    assert forest.observation_keys == ["pixels"]
    assert MCTSForest().done_keys == ["done", "truncated", "terminated"]  # TorchRL's order
    with pytest.raises(ValueError, match="done_keys"):
        MCTSForest(done_keys=3)
    data_map = MCTSForest(max_size=50)
    assert data_map.max_size == 50
    filled, _ = build(MCTSForest, "branching")
    assert MCTSForest(data_map=filled.data_map).max_size == 1000
    with pytest.raises(ValueError, match="conflicting"):
        MCTSForest(data_map=filled.data_map, max_size=10)


def test_excluded_keys_are_not_stored():
    forest = MCTSForest(excluded_keys=["secret"])
    forest.extend(TensorDict(observation=torch.tensor([0]), action=torch.tensor([1]),
                             next=TensorDict(observation=torch.tensor([1]), secret=torch.ones(1), batch_size=[1]),
                             batch_size=[1]))
    assert ("next", "secret") not in forest.data_map.storage.get(torch.tensor([0])).keys(True)


def test_tree_api_on_vector_scenario():
    forest, root = build(MCTSForest, "vector4")
    tree = forest.get_tree(root)
    assert tree.node_id == 0 and tree.hash is None and tree.num_children == 2
    child = tree.subtree[0]
    assert child.parent.node_data["observation"].tolist() == tree.node_data["observation"].tolist()
    assert tree.parent is None
    assert tree.get_vertex_by_id(3).node_id == 3
    assert tree.get_vertex_by_hash(child.hash).node_id == child.node_id
    with pytest.raises(ValueError, match="node_id 99"):
        tree.get_vertex_by_id(99)
    assert child in tree
    hashes = tree.vertices()
    assert None in hashes and all(v.hash == h for h, v in hashes.items())
    assert set(tree.vertices(key_type="id")) == set(range(tree.num_vertices()))
    with pytest.raises(ValueError, match="key_type"):
        tree.vertices(key_type="name")
    leaf = tree.get_vertex_by_id(2)
    assert leaf.num_children == 0 and bool(leaf.is_terminal)
    assert not tree.is_terminal or tree.rollout is not None
    assert list(tree.node_observations.keys()) == ["observation"]
    assert torch.equal(tree.node_observation, tree.node_data["observation"])
    tree.visits = torch.tensor(4)
    assert tree.count.item() == 4
    text = tree.to_string(lambda t: t.node_id)
    assert text.splitlines()[0] == "(0,) 1" and " (0, 1) 4" in text  # the root has no rollout


def test_rejoining_vertex_counted_per_path():
    forest, root = build(MCTSForest, "rejoining")
    tree = forest.get_tree(root)
    assert tree.num_vertices() == 5
    assert tree.num_vertices(count_repeat=True) == 7  # the shared vertices are reached by two paths
    shared = tree.subtree[0].subtree[0]
    assert shared.rollout.batch_size == (2, 1)  # one rollout per way in
    assert shared.parent is not None


def test_make_node_specs_and_fully_expanded():
    specs = Composite(input_spec=Composite(full_action_spec=Composite(action=Categorical(2)),
                                           full_state_spec=Composite()),
                      output_spec=Composite(full_observation_spec=Composite(), full_reward_spec=Composite(),
                                            full_done_spec=Composite()))
    data = TensorDict(observation=torch.zeros(2), action=torch.tensor([1, 0]),
                      next=TensorDict(observation=torch.ones(2, 1), batch_size=[2]), batch_size=[2])
    node = Tree.make_node(data, specs=specs)
    assert node.num_children == 1 and node.prev_action.item() == 0 and node.branching_action.item() == 1
    assert node.full_action_spec["action"].n == 2 and isinstance(node.full_done_spec, Composite)
    assert node.full_state_spec is not None and node.full_observation_spec is not None
    assert node.full_reward_spec is not None
    with pytest.raises(ValueError, match="no specs"):
        _ = Tree.make_node(TensorDict(observation=torch.zeros(1))).full_action_spec
    env = SimpleNamespace(full_action_spec=Composite(action=Categorical(1)))
    assert node.fully_expanded(env)
    assert not node.fully_expanded(SimpleNamespace(cardinality=lambda td: 3))
    assert tree_module.Tree is Tree


def test_max_depth_cuts_the_tree():
    forest, root = build(MCTSForest, "docstring")
    assert forest.get_tree(root).max_length() == 2
    assert forest.get_tree(root, max_depth=0).max_length() == 1
    assert list(MCTSForest.valid_paths(forest.get_tree(root, max_depth=0))) == [(0,), (1,), (2,)]


def test_pendulum_rollouts_branch_like_torchrl_docstring():
    # TorchRL's MCTSForest example: two rollouts from one reset state, a third from the second's 4th step.
    from tensordict import assert_close

    from tdrl.envs import PendulumEnv

    env = PendulumEnv()
    env.set_seed(0)
    reset = env.reset()
    forest = MCTSForest(observation_keys=["th", "thdot"])
    r0 = env.rollout(6, auto_reset=False, tensordict=reset.clone())
    forest.extend(r0)
    r1 = env.rollout(6, auto_reset=False, tensordict=reset.clone())
    forest.extend(r1)
    forest.extend(env.rollout(6, auto_reset=False, tensordict=r1[3].exclude("next")))
    assert len(forest) == 18
    tree = forest.get_tree(r0[0])
    assert tree.max_length() == 2 and list(tree.valid_paths()) == [(0,), (1, 0), (1, 1)]
    assert_close(r1, tree.rollout_from_path((1, 0)), intersection=True)
    expanded = forest.get_tree(r0[0], compact=False)
    assert expanded.max_length() == 9
    assert list(expanded.valid_paths())[-1] == (1, 0, 0, 1, 0, 0, 0, 0, 0)


@pytest.mark.parametrize(
    ("module", "name"),
    [("tree", "MCTSForest"), ("tree", "Tree"), ("tdstorage", "TensorDictMap"), ("tdstorage", "TensorMap"),
     ("query", "QueryModule"), ("query", "HashToInt"), ("hash", "SipHash"), ("hash", "RandomProjectionHash"),
     ("hash", "BinaryToDecimal")],
)
def test_torchrl_module_paths(module, name):
    import importlib

    import tdrl.data

    assert getattr(importlib.import_module(f"tdrl.data.map.{module}"), name) is getattr(tdrl.data, name)
