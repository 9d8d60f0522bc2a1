"""Weight updates reach every worker, whichever way the policy was given and the weights are sent."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.collectors import MultiAsyncCollector, MultiSyncCollector
from tdrl.weight_update import (
    MultiProcessWeightSyncScheme,
    NoWeightSyncScheme,
    SharedMemWeightSyncScheme,
    VanillaWeightUpdater,
)
from tests.collectors._helpers import gym_pendulum, linear_policy, locked_policy_factory

pytestmark = pytest.mark.timeout(120)

ENVS = [gym_pendulum, gym_pendulum]


def _zeros(policy):
    return TensorDict.from_module(policy).detach().clone().zero_()


def _all_zero_sync(collector) -> bool:
    return bool((collector.next()["action"] == 0).all())


def _next_batches_zero_async(collector, n: int) -> bool:
    """True when, after each worker's in-flight batch, each worker's next batch has zero actions."""
    seen: dict[int, int] = {}
    ok = True
    while min(seen.get(w, 0) for w in range(n)) < 2:
        batch = collector.next()
        worker = int(batch["collector", "traj_ids"][0]) % n
        seen[worker] = seen.get(worker, 0) + 1
        if seen[worker] == 2:
            ok = ok and bool((batch["action"] == 0).all())
    return ok


def test_plain_policy_in_place_update_and_bare_push():
    policy = linear_policy()
    with MultiSyncCollector(ENVS, policy, frames_per_batch=10, total_frames=-1) as c:
        assert not _all_zero_sync(c)
        with torch.no_grad():
            for p in policy.parameters():
                p.zero_()
        c.update_policy_weights_()
        assert _all_zero_sync(c)


def test_plain_policy_explicit_weights_and_replaced_params():
    policy = linear_policy()
    with MultiSyncCollector(ENVS, policy, frames_per_batch=10, total_frames=-1) as c:
        c.update_policy_weights_(_zeros(policy))
        assert _all_zero_sync(c)
        policy.module.weight = torch.nn.Parameter(torch.ones(1, 3))  # a new tensor: must be pushed
        policy.module.bias = torch.nn.Parameter(torch.zeros(1))
        c.update_policy_weights_()
        assert not _all_zero_sync(c)


def test_policy_factory_unpicklable_policy_weights_reach_every_worker():
    with MultiAsyncCollector(ENVS, policy_factory=locked_policy_factory, frames_per_batch=5,
                             total_frames=-1) as c:
        batch = c.next()
        assert not (batch["action"] == 0).all()
        c.update_policy_weights_(_zeros(locked_policy_factory()))
        assert _next_batches_zero_async(c, 2)
    with pytest.raises(ValueError, match="policy_factory"):
        with MultiSyncCollector(ENVS, policy_factory=locked_policy_factory, frames_per_batch=4) as c:
            c.update_policy_weights_()


@pytest.mark.timeout(180)
def test_policy_factory_under_spawn():
    factories = [locked_policy_factory, lambda: locked_policy_factory()]
    with MultiSyncCollector(ENVS, policy_factory=factories, frames_per_batch=10, total_frames=-1,
                            mp_start_method="spawn") as c:
        assert not _all_zero_sync(c)
        c.update_policy_weights_(_zeros(locked_policy_factory()))
        assert _all_zero_sync(c)


@pytest.mark.parametrize("scheme_cls", [MultiProcessWeightSyncScheme, SharedMemWeightSyncScheme])
def test_schemes_with_policy_factory(scheme_cls):
    scheme = scheme_cls()
    with MultiSyncCollector(ENVS, policy_factory=locked_policy_factory, frames_per_batch=10, total_frames=-1,
                            weight_sync_schemes={"policy": scheme}) as c:
        assert not _all_zero_sync(c)
        c.update_policy_weights_(_zeros(locked_policy_factory()))
        assert _all_zero_sync(c)
        c.update_policy_weights_(TensorDict.from_module(locked_policy_factory()).detach(), worker_ids=[1])
        batch = c.next()
        assert (batch["action"][0] == 0).all() and not (batch["action"][1] == 0).all()


def test_scheme_with_plain_policy_and_state_dict_strategy():
    policy = linear_policy()
    scheme = MultiProcessWeightSyncScheme(strategy="state_dict")
    with MultiSyncCollector(ENVS, policy, frames_per_batch=10, total_frames=-1,
                            weight_sync_schemes={"policy": scheme}) as c:
        with torch.no_grad():
            policy.module.weight.zero_()
            policy.module.bias.zero_()
        assert not _all_zero_sync(c)  # the workers hold copies: nothing changes until a push
        c.update_policy_weights_()
        assert _all_zero_sync(c)


def test_no_weight_sync_scheme_keeps_worker_weights():
    policy = linear_policy()
    with MultiSyncCollector(ENVS, policy, frames_per_batch=10, total_frames=-1,
                            weight_sync_schemes={"policy": NoWeightSyncScheme()}) as c:
        c.update_policy_weights_(_zeros(policy))
        assert not _all_zero_sync(c)


def test_custom_weight_updater_is_used():
    policy = linear_policy()
    pushed = []
    updater = VanillaWeightUpdater(policy_weights=TensorDict.from_module(policy))
    updater.register_post_hook(lambda: pushed.append(True))
    with MultiSyncCollector(ENVS, policy, frames_per_batch=10, total_frames=-1, weight_updater=updater) as c:
        assert updater.collector is c
        c.update_policy_weights_(_zeros(policy))
        assert pushed == [True]
        assert _all_zero_sync(c)


def test_bad_weights_name_the_keys():
    with MultiSyncCollector(ENVS, linear_policy(), frames_per_batch=4, total_frames=-1) as c:
        with pytest.raises(KeyError, match="unexpected"):
            c.update_policy_weights_(TensorDict({"module": {"other": torch.zeros(1)}}, []))


@pytest.mark.timeout(180)
def test_plain_policy_under_spawn_reads_shared_weights():
    policy = linear_policy()
    with MultiAsyncCollector(ENVS, policy, frames_per_batch=5, total_frames=-1, mp_start_method="spawn") as c:
        assert not (c.next()["action"] == 0).all()
        with torch.no_grad():
            for p in policy.parameters():
                p.zero_()
        assert _next_batches_zero_async(c, 2)  # no push needed: the workers read the parent's tensors
