"""Trajectory, traj predicates, iter/filter_trajectories and find_start_stop_traj (golden vs TorchRL 0.14.1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict, lazy_stack

import tdrl.data as data
from tdrl._utils import TDRLWarning
from tdrl.data import (
    Trajectory,
    TrajectoryPredicate,
    filter_trajectories,
    find_start_stop_traj,
    iter_trajectories,
    traj,
)

GOLDEN = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN))
import record_trajectories  # noqa: E402

EXPECTED = json.loads((GOLDEN / "trajectories_torchrl_0_14_1.json").read_text())


def test_golden_boundaries_match_torchrl():
    assert record_trajectories.boundaries(data) == EXPECTED["boundaries"]


@pytest.mark.filterwarnings("ignore::tdrl._utils.TDRLWarning")
def test_golden_filters_match_torchrl():
    assert record_trajectories.filters(data) == EXPECTED["filters"]


def test_find_start_stop_traj_wraps_and_errors():
    ids = torch.tensor([5, 5, 5, 0, 0, 1, 1, 1, 5, 5])
    start, stop, lengths = find_start_stop_traj(trajectory=ids, at_capacity=True)
    assert (start[:, 0].tolist(), stop[:, 0].tolist(), lengths.tolist()) == ([8, 3, 5], [2, 4, 7], [5, 2, 3])
    start, _, lengths = find_start_stop_traj(trajectory=ids, at_capacity=False, device=torch.device("cpu"))
    assert start[:, 0].tolist() == [0, 3, 5, 8] and lengths.tolist() == [3, 2, 3, 2]
    with pytest.raises(TypeError, match="exactly one"):
        find_start_stop_traj(at_capacity=False)
    with pytest.raises(RuntimeError, match="non-empty"):
        find_start_stop_traj(end=torch.zeros(0, dtype=torch.bool), at_capacity=False)
    with pytest.raises(RuntimeError, match="cursor"):
        find_start_stop_traj(end=torch.zeros(3, dtype=torch.bool), at_capacity=True, cursor=1.5)
    _, stop, _ = find_start_stop_traj(end=torch.zeros(4, dtype=torch.bool), at_capacity=True, cursor=range(0, 2))
    assert stop[:, 0].tolist() == [1]


def test_trajectory_view():
    td = record_trajectories.transitions()[:3]
    t = Trajectory(td)
    assert t.length == 3 and float(t.total_reward) == 3.0
    assert torch.equal(t.reward, td["next", "reward"]) and torch.equal(t.observation, td["observation"])
    assert torch.equal(t["next", "done"], td["next", "done"])
    assert isinstance(t[1:], Trajectory) and t[1:].length == 2
    assert repr(t) == "Trajectory(length=3, keys=['next', 'observation', 'traj_ids'])"
    with pytest.raises(AttributeError, match="no entry 'missing'"):
        _ = t.missing
    stacked = lazy_stack([t, Trajectory(record_trajectories.transitions()[3:5])])
    assert stacked.batch_size[0] == 2
    with pytest.raises(ValueError, match="one batch dim"):
        Trajectory(TensorDict(a=torch.zeros(2, 2), batch_size=[2, 2]))


def test_predicates_compose_and_report_keys():
    p = (traj.reward.sum() > 1) & (traj.length < 4) | ~(traj[("next", "done")] == True).all()  # noqa: E712
    assert isinstance(p, TrajectoryPredicate)
    assert p.required_keys() == frozenset({"reward", ("next", "done")})
    assert TrajectoryPredicate(lambda t: True).required_keys() is None
    assert "traj.reward.sum()" in repr(p)
    per_step = traj.reward > 1
    with pytest.raises(TypeError, match=r"\.any\(\) or \.all\(\)"):
        filter_trajectories(record_trajectories.transitions(), per_step)
    with pytest.raises(TypeError, match="per-transition"):
        per_step(None)
    with pytest.raises(KeyError, match="nope"):
        filter_trajectories(record_trajectories.transitions(), traj.nope.sum() > 0)
    with pytest.raises(TypeError):
        hash(traj.reward)


def test_iter_trajectories_keys_and_errors():
    td = record_trajectories.transitions()
    td["collector", "traj_ids"] = torch.tensor([7] * 5 + [8] * 5)
    assert [t.length for t in iter_trajectories(td)] == [5, 5]  # ("collector", "traj_ids") wins
    assert [t.length for t in iter_trajectories(td, "traj_ids")] == [3, 2, 4, 1]
    with pytest.warns(TDRLWarning, match="end flags"):
        assert [t.length for t in iter_trajectories(td.exclude("traj_ids", "collector"))] == [3, 2, 4, 1]
    assert list(iter_trajectories(td[:0])) == []
    with pytest.raises(KeyError, match="'episode_id' not found"):
        list(iter_trajectories(td, "episode_id"))
    with pytest.raises(KeyError, match="Cannot split"):
        list(iter_trajectories(TensorDict(x=torch.zeros(3), batch_size=[3])))
    with pytest.raises(ValueError, match="one batch dim"):
        list(iter_trajectories(TensorDict(x=torch.zeros(3, 2), batch_size=[3, 2])))
    with pytest.raises(TypeError, match="TensorDict"):
        list(iter_trajectories(torch.zeros(3)))
