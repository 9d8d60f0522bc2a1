"""RayCollector, RayReplayBuffer and the Ray weight sync on a local 2-node Ray cluster (integration)."""

from __future__ import annotations

import os
import signal
import time
from functools import partial

import pytest
import torch
from tensordict import TensorDict

from tests.collectors._helpers import gym_pendulum, linear_policy

ray = pytest.importorskip("ray")

from tdrl.collectors import RayWeightUpdater  # noqa: E402
from tdrl.collectors.distributed import RayCollector  # noqa: E402
from tdrl.data import LazyTensorStorage, PrioritizedSampler, RayReplayBuffer, TensorDictReplayBuffer  # noqa: E402
from tests.collectors._ray_cluster import two_node_cluster, wait_for_nodes  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

SPREAD = {"num_cpus": 1, "scheduling_strategy": "SPREAD"}


@pytest.fixture(scope="module")
def cluster():
    with two_node_cluster() as address:
        ray.init(address=address, log_to_driver=False)
        try:
            wait_for_nodes(ray, 2)
            yield address
        finally:
            ray.shutdown()


def _zeros(policy):
    return TensorDict.from_module(policy).detach().clone().zero_()


def test_two_collectors_on_two_nodes_get_every_weight_update(cluster):
    policy = linear_policy()
    c = RayCollector(gym_pendulum, policy, num_collectors=2, frames_per_batch=20, total_frames=-1, sync=True,
                     remote_configs=SPREAD, track_policy_version=True, timeout=300)
    try:
        nodes = ray.get([a.node_id.remote() for a in c.remote_collectors], timeout=120)
        assert len(set(nodes)) == 2, "SPREAD should place one actor on each node"
        batch = c.next()
        assert batch.shape == torch.Size([2, 10])
        assert (batch["action"] != 0).any(dim=-1).all()  # the initial linear policy moves on both actors
        assert (batch["policy_version"] == 0).all()
        c.update_policy_weights_(_zeros(policy))
        batch = c.next()
        assert (batch["action"] == 0).all(), "every actor must act with the zeroed weights"
        assert (batch["policy_version"] == 1).all()
        with torch.no_grad():
            policy.module.bias.fill_(0.5)
            policy.module.weight.zero_()
        c.update_policy_weights_()  # the local policy's weights
        batch = c.next()
        assert torch.allclose(batch["action"], torch.full_like(batch["action"], 0.5))
        assert c.policy_version == 2
    finally:
        c.shutdown()
    assert ray.is_initialized(), "a collector that joined a running cluster leaves it running"


def test_async_collectors_stream_batches_and_weight_updater(cluster):
    policy = linear_policy()
    c = RayCollector([gym_pendulum, gym_pendulum], policy, frames_per_batch=8, total_frames=48,
                     remote_configs=SPREAD, max_weight_update_interval=0, timeout=300)
    try:
        assert isinstance(c.weight_updater, RayWeightUpdater)
        with torch.no_grad():
            policy.module.weight.zero_()
            policy.module.bias.zero_()
        seen = [b for b in c]
        assert sum(b.numel() for b in seen) == 48 and all(b.shape == torch.Size([8]) for b in seen)
        # each actor's second batch onwards was collected after the updater pushed the zeroed weights
        assert (seen[-1]["action"] == 0).all()
    finally:
        c.shutdown()


def test_collectors_extend_a_ray_replay_buffer_and_priorities_update_remotely(cluster):
    rb = RayReplayBuffer(replay_buffer_cls=TensorDictReplayBuffer,
                         storage=partial(LazyTensorStorage, 1000)(), sampler=PrioritizedSampler(1000, 0.9, 1.0),
                         batch_size=16)
    c = RayCollector(gym_pendulum, linear_policy(), num_collectors=2, frames_per_batch=20, total_frames=80,
                     sync=True, replay_buffer=rb, remote_configs=SPREAD, timeout=300)
    try:
        out = list(c)
        assert out == [None] * 4  # the actors wrote the data themselves
        assert len(rb) == 80 and rb.write_count == 80
        sample = rb.sample()
        assert sample.shape == torch.Size([16]) and "index" in sample.keys()
        idx = sample["index"][:1]
        rb.update_priority(idx, torch.tensor([1e6]))
        hits = torch.cat([rb.sample()["index"] for _ in range(5)])
        assert (hits == idx).float().mean() > 0.9  # the remote sampler now draws the boosted element
    finally:
        c.shutdown()
        rb.close()
    with pytest.raises(RuntimeError, match="closed"):
        len(rb)


def test_killed_actor_is_replaced_and_gets_the_latest_weights(cluster):
    policy = linear_policy()
    c = RayCollector(gym_pendulum, policy, num_collectors=2, frames_per_batch=20, total_frames=-1, sync=True,
                     remote_configs={**SPREAD, "max_restarts": 1}, track_policy_version=True, timeout=300)
    try:
        c.update_policy_weights_(_zeros(policy))
        c.next()
        victim = c.remote_collectors[0]
        pid = ray.get(victim.pid.remote(), timeout=60)
        os.kill(pid, signal.SIGKILL)
        time.sleep(1)
        batch = c.next()  # actor 0 died mid-run: it is rebuilt, sent the weights, and collects again
        assert batch.shape == torch.Size([2, 10])
        assert c.remote_collectors[0] is not victim
        assert (batch["action"] == 0).all() and (batch["policy_version"] == 1).all()
        pid = ray.get(c.remote_collectors[1].pid.remote(), timeout=60)
        os.kill(pid, signal.SIGKILL)
        c.next()  # actor 1 has its own restart budget
        os.kill(ray.get(c.remote_collectors[0].pid.remote(), timeout=60), signal.SIGKILL)
        with pytest.raises(RuntimeError, match="collector actor 0 died"):
            c.next()  # no restarts left: the error names the actor
    finally:
        c.shutdown()
    assert c.remote_collectors == []


def test_multi_process_collector_inside_each_actor(cluster):
    policy = linear_policy()
    c = RayCollector(gym_pendulum, policy, num_collectors=2, frames_per_batch=16, total_frames=32, sync=True,
                     collector_class="sync", num_workers_per_collector=2, remote_configs=SPREAD, timeout=300)
    try:
        c.update_policy_weights_(_zeros(policy))
        batches = list(c)
        assert len(batches) == 2 and all(b.numel() == 16 for b in batches)
        assert (batches[-1]["action"] == 0).all()
    finally:
        c.shutdown()
