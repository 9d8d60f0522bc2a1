"""MCAdvantage: TorchRL 0.14.1 golden outputs, replay-buffer integration, selection and errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import LazyStackStorage, ReplayBuffer, TensorDictReplayBuffer
from tdrl.objectives.llm import MCAdvantage, MCAdvantageSelector

from ._mc_scenarios import MC_SCENARIOS, _traj, run_mc

GOLDEN = torch.load(Path(__file__).with_name("golden_llm_torchrl_0_14_1.pt"), weights_only=True)["mc"]


@pytest.mark.parametrize("name", list(MC_SCENARIOS))
def test_writes_match_torchrl(name):
    ours, ref = run_mc(MCAdvantage, ReplayBuffer, LazyStackStorage, name), GOLDEN[name]
    assert [w is None for w in ours["written"]] == [w is None for w in ref["written"]]
    for mine, theirs in zip(ours["written"], ref["written"]):
        if mine is not None:
            torch.testing.assert_close(mine[0], theirs[0])
            torch.testing.assert_close(mine[1], theirs[1])
    assert ours["buffer_len"] == ref["buffer_len"]


def test_group_normalisation_by_hand():
    t = MCAdvantage(grpo_size=3, prompt_key="group")
    rewards = [1.0, 0.0, 0.5]
    outs = [t.inv(_traj(4, [r], False)) for r in rewards]
    assert outs[0] is None and outs[1] is None
    r = torch.tensor(rewards)
    torch.testing.assert_close(outs[2]["advantage"].reshape(-1), (r - r.mean()) / r.std())
    assert t.queued_groups == 0 and t.get_stats()["written_groups"] == 1


def test_equal_rewards_give_zero_advantage():
    t = MCAdvantage(grpo_size=2, prompt_key="group")
    t.inv(_traj(0, [1.0], False))
    assert bool((t.inv(_traj(0, [1.0], False))["advantage"] == 0).all())


@pytest.mark.parametrize("rb_cls", [ReplayBuffer, TensorDictReplayBuffer])
def test_sampled_batches_carry_the_advantage(rb_cls):
    rb = rb_cls(storage=LazyStackStorage(20), batch_size=4)
    rb.append_transform(MCAdvantage(grpo_size=2))
    assert len(rb.extend(_traj(0, [1.0], True))) == 0  # held until the group is complete
    assert len(rb) == 0
    assert len(rb.add(_traj(1, [1.0], True))) == 0
    rb.extend(_traj(0, [0.0], True))
    assert len(rb) == 2
    assert "advantage" in rb.sample().keys()


def test_selector_strategies():
    values = TensorDict({"return": torch.tensor([0.0, 0.2, 0.4, 1.0])}, [4])
    assert MCAdvantageSelector("first").select(values, group_size=2) == [0, 1]
    assert MCAdvantageSelector("uniform").select(values, group_size=2) == [0, 3]
    assert MCAdvantageSelector().select(values, group_size=2, keep_return_bounds=(0.45, 0.55)) == [0, 3]
    assert MCAdvantageSelector(max_combinations=1).select(
        values, group_size=3, keep_return_bounds=(0.7, 0.9)) is None
    assert MCAdvantageSelector(max_combinations=1).select(
        values, group_size=2, keep_return_bounds=(0.6, 0.8)) == [2, 3]


def test_errors():
    with pytest.raises(ValueError, match="trajectory_return"):
        MCAdvantage(grpo_size=2, keep_return_bounds=(0.1, 0.9))
    with pytest.raises(ValueError, match="candidate_group_size"):
        MCAdvantage(grpo_size=2, candidate_group_size=1)
    with pytest.raises(ValueError, match="requires trajectory_return"):
        MCAdvantage(grpo_size=2, candidate_group_size=3)
    with pytest.raises(ValueError, match="grpo_size >= 2"):
        MCAdvantage(grpo_size=1, trajectory_return="sum")
    with pytest.raises(ValueError, match="increasing"):
        MCAdvantage(grpo_size=2, trajectory_return="sum", keep_return_bounds=(0.9, 0.1))
    t = MCAdvantage(grpo_size=2, prompt_key="group")
    unfinished = _traj(0, [1.0, 1.0], False)
    unfinished["next", "done"][-1] = False
    with pytest.raises(RuntimeError, match="complete trajectories"):
        t.inv(unfinished)
    with pytest.raises(KeyError, match="missing group id"):
        MCAdvantage(grpo_size=2).inv(_traj(0, [1.0], False))
