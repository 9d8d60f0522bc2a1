"""HERReplayBuffer: goal relabelling per strategy, golden-checked against TorchRL 0.14.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data
from tdrl.data import HERReplayBuffer, HindsightStrategy

GOLDEN = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN))
import record_her  # noqa: E402  (the shared trajectory and reward of the golden file)


def test_golden_relabelled_goals_and_rewards_match_torchrl():
    expected = json.loads((GOLDEN / "her_torchrl_0_14_1.json").read_text())["cases"]
    assert record_her.record(data) == expected


def _rb(strategy, ratio=1.0, storage=None, **kw):
    return HERReplayBuffer(
        record_her.reward_fn, her_ratio=ratio, strategy=strategy,
        storage=data.LazyTensorStorage(20) if storage is None else storage, **kw,
    )


def _episode_of(i: int) -> tuple[int, int]:
    bounds = [(0, 3), (4, 6), (7, 11), (12, 13)]
    return next(b for b in bounds if b[0] <= i <= b[1])


@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_goals_come_from_the_same_episode(strategy):
    torch.manual_seed(1)
    rb = _rb(strategy)
    rb.extend(record_her.steps())
    b = rb.sample(64)
    src = b["desired_goal"][:, 0].long()
    for i, g in zip(b["index"].tolist(), src.tolist()):
        lo, hi = _episode_of(i)
        assert lo <= g <= hi
        if strategy == "future":
            assert g >= i
        if strategy == "final":
            assert g == hi
    assert torch.equal(b["desired_goal"], b["next", "desired_goal"])
    assert torch.equal(b["next", "reward"], record_her.reward_fn(b))


def test_ratio_zero_and_split():
    torch.manual_seed(0)
    rb = _rb("final", ratio=0.0)
    rb.extend(record_her.steps())
    b = rb.sample(8)
    assert (b["desired_goal"] == -1).all() and (b["next", "reward"] == 0).all()
    rb = _rb("final", ratio=0.25)
    rb.extend(record_her.steps())
    b = rb.sample(8)
    assert (b["desired_goal"][:2] != -1).all() and (b["desired_goal"][2:] == -1).all()


def test_random_strategy_uses_the_whole_buffer_and_the_generator():
    rb = _rb("random", generator=torch.Generator().manual_seed(3))
    rb.extend(record_her.steps())
    first = rb.sample(32)["desired_goal"]
    rb.set_rng(torch.Generator().manual_seed(3))
    assert torch.equal(rb.sample(32)["desired_goal"], first)
    assert len(set(first[:, 0].tolist())) > 4


def test_list_storage_and_terminated_only():
    steps = record_her.steps()
    del steps["next", "done"]
    rb = _rb("final", storage=data.ListStorage(20))
    rb.extend(steps)
    b = rb.sample(16)
    assert [int(g) for g in b["desired_goal"][:, 0]] == [_episode_of(i)[1] for i in b["index"].tolist()]


def test_wraparound_never_crosses_the_write_cursor():
    # 14 steps into capacity 10: rows 0-3 hold steps 10-13 (done at step 11 = row 1; row 3 written last),
    # rows 4-9 steps 4-9 (done at row 6). Rows 7-9 start an episode that wraps: it ends at row 9.
    torch.manual_seed(0)
    rb = _rb("episode", storage=data.LazyTensorStorage(10))
    rb.extend(record_her.steps())
    b = rb.sample(200)
    stored = rb[torch.arange(10)]["observation"][:, 0].long().tolist()
    assert stored == [10, 11, 12, 13, 4, 5, 6, 7, 8, 9]
    episodes = [(0, 1), (2, 3), (4, 6), (7, 9)]
    for i, g in zip(b["index"].tolist(), b["desired_goal"][:, 0].long().tolist()):
        lo, hi = next(e for e in episodes if e[0] <= i <= e[1])
        assert g in stored[lo:hi + 1]


def test_boundaries_follow_every_write():
    torch.manual_seed(0)
    rb = _rb("final", storage=data.LazyTensorStorage(4))
    td = TensorDict(
        {"desired_goal": torch.zeros(4, 1), "achieved_goal": torch.arange(4.0).unsqueeze(-1),
         "next": {"reward": torch.zeros(4, 1), "done": torch.tensor([[False], [True], [False], [True]])}},
        batch_size=[4],
    )
    rb.extend(td)
    assert rb.sample(8)["desired_goal"].max() == 3
    td["next", "done"] = torch.tensor([[False], [False], [False], [False]])
    td["achieved_goal"] += 10
    rb.extend(td)  # same length, same cursor: the episode layout still changed
    b = rb.sample(8)
    assert (b["desired_goal"] == 13).all()


def test_errors():
    with pytest.raises(ValueError, match="her_ratio"):
        _rb("final", ratio=1.5)
    with pytest.raises(ValueError, match="strategy must be one of"):
        _rb("later")
    rb = _rb("final")
    rb.extend(record_her.steps().exclude("achieved_goal"))
    with pytest.raises(KeyError, match="achieved_goal_key"):
        rb.sample(2)
    rb = _rb("final")
    rb.extend(record_her.steps().exclude(("next", "done"), ("next", "terminated")))
    with pytest.raises(KeyError, match="episode boundaries"):
        rb.sample(2)
    rb = HERReplayBuffer(lambda td: torch.zeros(3), her_ratio=1.0, storage=data.LazyTensorStorage(20))
    rb.extend(record_her.steps())
    with pytest.raises(ValueError, match="reward_fn returned shape"):
        rb.sample(4)


def test_state_dict_and_strategy_enum():
    rb = _rb(HindsightStrategy.EPISODE)
    rb.extend(record_her.steps())
    sd = rb.state_dict()
    assert sd["_her"]["strategy"] == "episode"
    other = _rb("episode")
    other.load_state_dict(sd)
    assert len(other) == len(rb) and "strategy='episode'" in repr(other)
    assert str(HindsightStrategy.FUTURE) == "future" and HindsightStrategy.FUTURE == "future"
