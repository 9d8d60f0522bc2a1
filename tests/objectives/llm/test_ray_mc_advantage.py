from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

ray = pytest.importorskip("ray")

from tdrl.objectives.llm import MCAdvantage, RayMCAdvantage  # noqa: E402


def _traj(group: int, rewards: list[float]) -> TensorDict:
    t = len(rewards)
    return TensorDict(group_id=torch.full((t,), group), batch_size=[t],
                      next=TensorDict(reward=torch.tensor(rewards).reshape(t, 1),
                                      done=torch.tensor([False] * (t - 1) + [True]).reshape(t, 1), batch_size=[t]))


def test_bad_arguments_fail_before_ray_starts():
    with pytest.raises(ValueError):
        RayMCAdvantage(grpo_size=2, candidate_group_size=4)  # larger candidate groups need trajectory_return
    assert not ray.is_initialized()


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_ray_mc_advantage_matches_the_local_one_and_shares_its_queues():
    kwargs = dict(grpo_size=3, prompt_key="group_id", trajectory_return="sum")
    local = MCAdvantage(**kwargs)
    remote = RayMCAdvantage(**kwargs, actor_name="tdrl-test-mc", remote_config={"num_cpus": 0},
                            ray_init_config={"num_cpus": 1, "include_dashboard": False, "log_to_driver": False})
    second = RayMCAdvantage(**kwargs, actor_name="tdrl-test-mc")  # another writer, the same actor
    try:
        data = [_traj(0, [0.0, 1.0]), _traj(1, [2.0]), _traj(0, [3.0])]
        for td in data:
            assert local.inv(td) is None and remote.inv(td) is None
        assert remote.queued_groups == second.queued_groups == 2
        last = _traj(0, [0.5, 0.5])
        expected = local.inv(last)
        out = second.inv(last)  # completes the group queued through `remote`
        assert out is not None and torch.allclose(out["advantage"], expected["advantage"])
        assert remote.get_stats() == local.get_stats()
    finally:
        second.close()
        remote.close()
    assert not ray.is_initialized()
