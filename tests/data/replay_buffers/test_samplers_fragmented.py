"""Tests of ``SliceSampler(fragmented=True)``: trajectories interleaved in storage order."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensordict import TensorDict

from tdrl.data.replay_buffers import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.data.replay_buffers.samplers import SliceSampler, SliceSamplerWithoutReplacement


def interleaved(lengths: list[int], order_seed: int) -> TensorDict:
    """Steps of ``len(lengths)`` trajectories in a random interleaving that keeps each one in order."""
    gen = torch.Generator().manual_seed(order_seed)
    owners = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])
    owners = owners[torch.randperm(owners.numel(), generator=gen)]
    steps = torch.zeros_like(owners)
    counters = [0] * len(lengths)
    for k, owner in enumerate(owners.tolist()):
        steps[k] = counters[owner]
        counters[owner] += 1
    return TensorDict({"traj": owners + 100, "step_count": steps, "obs": torch.arange(owners.numel())}, [owners.numel()])


def reference_runs(traj: list[int], step: list[int]) -> list[int]:
    by_traj: dict[int, set[int]] = {}
    for t, s in zip(traj, step):
        by_traj.setdefault(t, set()).add(s)
    lengths = []
    for steps in by_traj.values():
        run = 0
        for s in sorted(steps):
            if run and s - 1 not in steps:
                lengths.append(run)
                run = 0
            run += 1
        lengths.append(run)
    return sorted(lengths)


def check_slices(storage, index, info, slice_len=None):
    traj, step = storage._storage["traj"][index[0]], storage._storage["step_count"][index[0]]
    last = info[("next", "truncated")].reshape(-1).nonzero().squeeze(-1)
    first = torch.cat([torch.zeros(1, dtype=torch.long), last[:-1] + 1])
    for a, b in zip(first.tolist(), last.tolist()):
        assert (traj[a : b + 1] == traj[a]).all()
        assert (step[a : b + 1].diff() == 1).all()
        if slice_len is not None:
            assert b - a + 1 == slice_len


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lengths=st.lists(st.integers(1, 12), min_size=1, max_size=6),
    capacity=st.integers(4, 60),
    chunk=st.integers(1, 20),
    slice_len=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_runs_follow_trajectory_steps_across_ring_writes(lengths, capacity, chunk, slice_len, seed):
    torch.manual_seed(seed)
    data = interleaved(lengths, seed)
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(capacity),
        sampler=SliceSampler(slice_len=slice_len, traj_key="traj", fragmented=True, strict_length=False),
        batch_size=2 * slice_len,
    )
    for start in range(0, data.shape[0], chunk):
        rb.extend(data[start : start + chunk])
        storage = rb._storage
        n = len(storage)
        runs = rb._sampler._fragments.runs(storage, "traj", "step_count")
        live = storage._storage[:n]
        assert sorted(runs.lengths.tolist()) == reference_runs(live["traj"].tolist(), live["step_count"].tolist())
        index, info = rb._sampler.sample(storage, 2 * slice_len)
        check_slices(storage, index, info)


def test_strict_fragmented_slices_have_full_length_and_missing_steps_split_runs():
    data = interleaved([10, 10], 0)
    keep = ~((data["traj"] == 100) & (data["step_count"] == 5))
    data = data[keep]
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(40),
        sampler=SliceSampler(slice_len=4, traj_key="traj", fragmented=True),
        batch_size=12,
    )
    rb.extend(data)
    assert sorted(rb._sampler._fragments.runs(rb._storage, "traj", "step_count").lengths.tolist()) == [4, 5, 10]
    for _ in range(10):
        sample = rb.sample()
        index, info = rb._sampler.sample(rb._storage, 12)
        check_slices(rb._storage, index, info, slice_len=4)
        assert (sample["step_count"].view(3, 4).diff(dim=1) == 1).all()
    with pytest.raises(RuntimeError, match="sufficient length"):
        SliceSampler(slice_len=11, traj_key="traj", fragmented=True).sample(rb._storage, 22)


def test_fragmented_errors():
    storage = LazyTensorStorage(10)
    storage.set(torch.arange(4), TensorDict({"traj": torch.tensor([0, 0, 1, 0]), "step_count": torch.tensor([0, 1, 0, 1])}, [4]))
    with pytest.raises(RuntimeError, match="duplicate"):
        SliceSampler(slice_len=1, traj_key="traj", fragmented=True).sample(storage, 2)
    float_steps = LazyTensorStorage(10)
    float_steps.set(torch.arange(2), TensorDict({"traj": torch.zeros(2, dtype=torch.long), "step_count": torch.zeros(2)}, [2]))
    with pytest.raises(TypeError, match="integer"):
        SliceSampler(slice_len=1, traj_key="traj", fragmented=True).sample(float_steps, 2)
    with pytest.raises(ValueError, match="step_key"):
        SliceSampler(slice_len=2, fragmented=True, step_key=None)
    with pytest.raises(ValueError, match="span"):
        SliceSampler(slice_len=2, fragmented=True, span=True)
    with pytest.raises(ValueError, match="compile"):
        SliceSampler(slice_len=2, fragmented=True, compile=True)
    with pytest.raises(ValueError, match="static"):
        SliceSampler(slice_len=2, fragmented=True, ends=torch.ones(3, dtype=torch.bool), cache_values=True)
    with pytest.raises(TypeError):
        SliceSamplerWithoutReplacement(slice_len=2, fragmented=True)
