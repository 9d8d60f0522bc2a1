"""``PettingZooEnv`` / ``PettingZooWrapper`` (the `marl` extra): specs, grouping, masks and rollouts equal
TorchRL 0.14.1's (``golden_pettingzoo_torchrl_0_14_1.pt``, recorded by ``record_torchrl_pettingzoo.py``) on
parallel and AEC envs; spec checks, building by name, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("pettingzoo", reason="pettingzoo is not installed (the `marl` extra)")

from tdrl.envs import MarlGroupMapType  # noqa: E402
from tdrl.envs.libs import pettingzoo as lib  # noqa: E402
from tdrl.envs.utils import check_env_specs  # noqa: E402

from ._pettingzoo_cases import CASES, LeavingAgents, build, trace  # noqa: E402

GOLDEN = torch.load(Path(__file__).with_name("golden_pettingzoo_torchrl_0_14_1.pt"), weights_only=True)


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
    check_env_specs(build(lib, name))


def test_env_by_name_builds_the_task() -> None:
    aec = lib.PettingZooEnv("tictactoe_v3", parallel=False, use_mask=True, seed=0)
    assert not aec.parallel and aec.group_map == {"player_1": ["player_1"], "player_2": ["player_2"]}
    assert aec.done_on_any is False
    par = lib.PettingZooEnv("classic/rps_v2", parallel=True, seed=0, max_cycles=2)
    assert par.parallel and par.done_on_any is True and par.group_map == {"player": ["player_0", "player_1"]}
    td = par.rollout(5)
    assert td.batch_size == (2,) and bool(td["next", "done"][-1]) and td["next", "player", "reward"].shape == (2, 2, 1)
    assert "classic/tictactoe_v3" in lib.PettingZooEnv.available_envs_list()


def test_action_mask_follows_the_acting_agent() -> None:
    env = build(lib, "tictactoe_aec")
    td = env.reset()
    spec = env.full_action_spec["player_1", "action"]
    assert td["player_1", "mask"].tolist() == [True] and td["player_2", "mask"].tolist() == [False]
    assert td["player_1", "action_mask"].all() and spec.mask.all()
    td = env.rand_action(td)
    td["player_1", "action"] = torch.tensor([4])
    nxt = env.step(td)["next"]
    assert nxt["player_2", "mask"].tolist() == [True]
    assert nxt["player_2", "action_mask"][0, 4].item() is False and nxt["player_1", "action_mask"].all()
    # the random policy samples only free cells: a whole random game ends without an illegal move
    rollout = env.rollout(9, break_when_any_done=True)
    assert rollout["next", "done"][-1].item() and (rollout["next", "player_1", "reward"].abs() <= 1).all()


def test_group_maps() -> None:
    from pettingzoo.butterfly import knights_archers_zombies_v11 as kaz

    env = lib.PettingZooWrapper(kaz.parallel_env(), use_mask=True, group_map=MarlGroupMapType.ALL_IN_ONE_GROUP)
    assert env.group_map == {"agents": ["archer_0", "archer_1", "knight_0", "knight_1"]}
    per = lib.PettingZooWrapper(kaz.parallel_env(), use_mask=True)
    assert per.group_map == {"archer": ["archer_0", "archer_1"], "knight": ["knight_0", "knight_1"]}
    with pytest.raises(ValueError, match="knight_1"):
        lib.PettingZooWrapper(kaz.parallel_env(), group_map={"a": ["archer_0", "archer_1", "knight_0"]})


def test_errors() -> None:
    from pettingzoo.classic import tictactoe_v3

    with pytest.raises(ValueError, match="use_mask=True"):
        lib.PettingZooWrapper(tictactoe_v3.env())
    with pytest.raises(TypeError, match="ParallelEnv or AECEnv"):
        lib.PettingZooWrapper(env=object())
    with pytest.raises(RuntimeError, match="unknown task 'nope_v1'"):
        lib.PettingZooEnv("nope_v1", parallel=True)
    with pytest.raises(ValueError, match="no parallel version"):
        lib.PettingZooEnv("tictactoe_v3", parallel=True)
    with pytest.raises(RuntimeError, match="no batch dims"):
        lib.PettingZooWrapper(LeavingAgents(), batch_size=[2])
    env = lib.PettingZooWrapper(LeavingAgents(), done_on_any=False)  # agents leave, but no mask
    td = env.reset()
    with pytest.raises(ValueError, match="use_mask=True"):
        for _ in range(3):
            td = env.step(env.rand_action(td))["next"]
    with pytest.raises(RuntimeError, match="resets as a whole"):
        env.reset(td.set("_reset", torch.tensor([False])))


def test_seed_and_state() -> None:
    env = lib.PettingZooWrapper(LeavingAgents(), use_mask=True, return_state=True)
    env.set_seed(4)
    assert env.seed == 4
    td = env.reset(seed=2)
    assert td["state"].tolist() == [0.0, 2.0, 3.0, 1.0]
    assert env.full_observation_spec["state"].shape == (4,)
    assert td["agent", "info", "score"].tolist() == [2.0, 3.0, 4.0]
