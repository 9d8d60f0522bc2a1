"""``VmasEnv`` / ``VmasWrapper`` (the `marl` extra): specs, grouping and rollouts equal TorchRL 0.14.1's
(``golden_vmas_torchrl_0_14_1.pt``, recorded by ``record_torchrl_vmas.py``), spec checks, partial resets, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tdrl.envs import MarlGroupMapType
from tdrl.envs.libs import vmas as lib
from tdrl.envs.utils import check_env_specs

from ._vmas_cases import CASES, trace

vmas = pytest.importorskip("vmas", reason="vmas is not installed (the `marl` extra)")
GOLDEN = torch.load(Path(__file__).with_name("golden_vmas_torchrl_0_14_1.pt"), weights_only=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torchrl(name: str) -> None:
    ref, mine = GOLDEN["cases"][name], trace(lib, name)
    assert mine["group_map"] == ref["group_map"]
    assert mine["layout"] == ref["layout"]
    assert len(mine["steps"]) == len(ref["steps"])
    for i, (a, b) in enumerate(zip(mine["steps"], ref["steps"], strict=True)):
        assert sorted(a) == sorted(b), i
        for key, value in b.items():
            torch.testing.assert_close(a[key], value, msg=f"step {i}: {key}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_env_specs(name: str) -> None:
    check_env_specs(lib.VmasEnv(seed=0, **CASES[name]))


def test_wrapper_and_group_maps() -> None:
    raw = vmas.make_env("simple_tag", num_envs=2, wrapper=None, seed=0)
    env = lib.VmasWrapper(raw, group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT)
    assert sorted(env.group_map) == sorted(env.agent_names)
    td = env.rollout(2)
    assert td["next", "agent_0", "reward"].shape == (2, 2, 1, 1)
    env = lib.VmasWrapper(
        raw, group_map={"team": ["agent_0", "adversary_0"], "rest": ["adversary_1", "adversary_2"]}
    )
    assert env.het_specs_map == {"team": True, "rest": False}  # agent and adversary see different obs sizes
    td = env.rollout(2)
    assert td["next", "rest", "observation"].shape[:3] == (2, 2, 2)
    assert td["next", "team", "reward"].shape == (2, 2, 2, 1)


def test_errors_name_the_problem() -> None:
    with pytest.raises(TypeError, match="num_envs"):
        lib.VmasEnv("navigation", num_envs=None)
    with pytest.raises(TypeError, match="vmas.simulator.environment.Environment"):
        lib.VmasWrapper(object())
    raw = vmas.make_env("navigation", num_envs=2, wrapper=None, n_agents=2)
    with pytest.raises(ValueError, match="agent_1"):
        lib.VmasWrapper(raw, group_map={"agents": ["agent_0"]})
    with pytest.raises(TypeError, match="batch_size"):
        lib.VmasWrapper(raw, batch_size=[3])


def test_partial_reset_keeps_other_envs() -> None:
    env = lib.VmasEnv("navigation", num_envs=3, n_agents=2, seed=0)
    td = env.reset()
    td["agents", "action"] = torch.ones(3, 2, 2) * 0.5
    td = env.step(td)["next"].clone()
    before = td["agents", "observation"].clone()
    td["_reset"] = torch.tensor([[True], [False], [False]])
    out = env.reset(td)
    torch.testing.assert_close(out["agents", "observation"][1:], before[1:])
    assert not torch.equal(out["agents", "observation"][0], before[0])
