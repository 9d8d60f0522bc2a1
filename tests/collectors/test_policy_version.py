"""``track_policy_version``: every collected frame carries the number of weight updates its policy had seen."""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import TensorDictModule

from tdrl.collectors import Collector, MultiAsyncCollector, MultiSyncCollector
from tdrl.envs import GymEnv


def PendulumEnv() -> GymEnv:  # noqa: N802 - reads like the env class it builds
    return GymEnv("Pendulum-v1")

def _policy_eager() -> TensorDictModule:
    return TensorDictModule(torch.nn.Linear(3, 1), ["observation"], ["action"])

def test_single_process_versions_follow_updates() -> None:
    collector = Collector(PendulumEnv(), _policy_eager(), frames_per_batch=4, total_frames=12,
                          track_policy_version=True)
    seen = []
    for batch in collector:
        assert batch["policy_version"].dtype == torch.int64 and batch["policy_version"].shape == batch.shape
        seen.append(batch["policy_version"].unique().tolist())
        collector.update_policy_weights_()
    assert seen == [[0], [1], [2]]
    assert collector.policy_version == 3 == collector.get_policy_version()
    assert collector.state_dict()["policy_version"] == 3
    collector.shutdown()

def test_untracked_collector_writes_no_version() -> None:
    collector = Collector(PendulumEnv(), _policy_eager(), frames_per_batch=4, total_frames=4)
    batch = next(iter(collector))
    assert "policy_version" not in batch.keys() and collector.policy_version is None
    collector.shutdown()

def test_track_policy_version_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="track_policy_version must be a bool"):
        Collector(PendulumEnv(), _policy_eager(), frames_per_batch=4, track_policy_version="yes")

@pytest.mark.parametrize("cls", [MultiSyncCollector, MultiAsyncCollector])
def test_multi_process_batches_carry_the_version_they_were_requested_under(cls: type) -> None:
    collector = cls([PendulumEnv, PendulumEnv], _policy_eager(), frames_per_batch=8, total_frames=64,
                    track_policy_version=True)
    try:
        versions = []
        for batch in collector:
            assert batch["policy_version"].shape == batch.shape
            versions.append(int(batch["policy_version"].max()))
            collector.update_policy_weights_()
        # A batch never carries a version newer than the updates made before it was delivered.
        assert versions[0] == 0 and all(v <= i for i, v in enumerate(versions)) and max(versions) >= 1
        if cls is MultiSyncCollector:
            assert versions == sorted(versions)
        # MultiAsyncCollector: a worker may deliver a batch it collected before an update reached it.
        assert collector.policy_version == len(versions)
    finally:
        collector.shutdown()
