from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tests.collectors._helpers import gym_pendulum, linear_policy

ray = pytest.importorskip("ray")

from tdrl.collectors.distributed import RayCollector  # noqa: E402


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_ray_collector_sync_async_and_weights():
    policy = linear_policy()
    c = RayCollector([gym_pendulum, gym_pendulum], policy, frames_per_batch=10, total_frames=40, sync=True,
                     ray_init_config={"num_cpus": 2, "include_dashboard": False, "log_to_driver": False},
                     remote_configs={"num_cpus": 0.5})
    try:
        batches = list(c)
        assert [b.shape for b in batches] == [torch.Size([10])] * 4
        ids = batches[0]["collector", "traj_ids"]
        assert set(ids[:5].tolist()).isdisjoint(ids[5:].tolist())
        c.update_policy_weights_(TensorDict.from_module(policy).detach().clone().zero_())
        c.total_frames = -1
        assert (c.next()["action"] == 0).all()
        assert {"collector0", "collector1"} <= set(c.state_dict())
        with RayCollector(gym_pendulum, policy, num_collectors=2, frames_per_batch=6, total_frames=18,
                          remote_configs={"num_cpus": 0.5}) as a:  # reuses the running Ray instance
            assert [b.shape for b in a] == [torch.Size([6])] * 3
    finally:
        c.shutdown()
    assert not ray.is_initialized()
