from __future__ import annotations

import sys
import time

import pytest
import torch
from tensordict import TensorDict

from tests.collectors._helpers import gym_pendulum, linear_policy

ray = pytest.importorskip("ray")

from tdrl._utils.optional_ray import require_ray  # noqa: E402
from tdrl.collectors.distributed import RayCollector  # noqa: E402
from tdrl.envs import PendulumEnv  # noqa: E402


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_ray_collector_sync_async_and_weights():
    policy = linear_policy()
    c = RayCollector([gym_pendulum, gym_pendulum], policy, frames_per_batch=10, total_frames=40, sync=True,
                     ray_init_config={"num_cpus": 2, "include_dashboard": False, "log_to_driver": False},
                     remote_configs={"num_cpus": 0.5})
    try:
        batches = list(c)
        assert [b.shape for b in batches] == [torch.Size([2, 5])] * 4  # one row per actor, as TorchRL stacks them
        ids = batches[0]["collector", "traj_ids"]
        assert set(ids[0].tolist()).isdisjoint(ids[1].tolist())
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


def test_bad_arguments_are_refused_before_ray_starts():
    with pytest.raises(ValueError, match="multiple of num_collectors"):
        RayCollector(gym_pendulum, None, num_collectors=3, frames_per_batch=10, sync=True)
    with pytest.raises(ValueError, match="num_workers_per_collector"):
        RayCollector(gym_pendulum, None, frames_per_batch=10, num_workers_per_collector=2)
    with pytest.raises(ValueError, match="collector_class"):
        RayCollector(gym_pendulum, None, frames_per_batch=10, collector_class="threads")
    with pytest.raises(ValueError, match="trajs_per_batch"):
        RayCollector(gym_pendulum, None, frames_per_batch=10, trajs_per_batch=2)
    assert not ray.is_initialized()


def test_missing_ray_names_the_distributed_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(ImportError, match=r"RayCollector needs Ray.*tdrl\[distributed\]"):
        RayCollector(gym_pendulum, None, frames_per_batch=10)
    with pytest.raises(ImportError, match="distributed"):
        require_ray("RayReplayBuffer")


class _SlowEnvMaker:
    def __call__(self):
        env = PendulumEnv()
        step = env._step

        def slow(td):
            time.sleep(5)
            return step(td)

        env._step = slow
        return env


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_stuck_actor_raises_a_timeout_instead_of_hanging():
    c = RayCollector(_SlowEnvMaker(), None, frames_per_batch=100, timeout=3,
                     ray_init_config={"num_cpus": 1, "include_dashboard": False, "log_to_driver": False},
                     remote_configs={"num_cpus": 0.5})
    try:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match="no actor sent a batch within 3"):
            c.next()
        assert time.monotonic() - t0 < 60
    finally:
        c.shutdown()
    assert not ray.is_initialized()
