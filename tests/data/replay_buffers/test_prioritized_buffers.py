"""Prioritized buffers: weights in sampled batches, priority updates, bad priorities, compile."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data


def _td(n: int) -> TensorDict:
    return TensorDict(x=torch.arange(float(n)), batch_size=[n])


@pytest.mark.parametrize("storage", [lambda: data.ListStorage(8), lambda: data.LazyTensorStorage(8)])
def test_tdprb_sample_and_update(storage):
    rb = data.TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=0.5, storage=storage(), batch_size=16)
    rb.extend(_td(8))
    batch = rb.sample()
    assert set(batch.keys()) == {"x", "index", "priority_weight"}
    assert torch.equal(batch["x"].long(), batch["index"])
    batch["td_error"] = (batch["index"] == 3).float() * 10
    rb.update_tensordict_priority(batch)
    if 3 in batch["index"].tolist():
        counts = torch.bincount(rb.sample(256)["index"], minlength=8)
        assert counts[3] == counts.max()


def test_extend_with_priority_key_sets_priorities():
    rb = data.TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=1.0, storage=data.LazyTensorStorage(8), batch_size=128)
    rb.extend(_td(8).set("td_error", torch.tensor([0.0, 0, 0, 0, 0, 0, 5.0, 0])))
    assert set(rb.sample()["index"].tolist()) == {6}


def test_prb_plain_tensors_info():
    rb = data.PrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=data.LazyTensorStorage(10), batch_size=4)
    index = rb.extend(torch.arange(10.0))
    rb.update_priority(index, torch.linspace(0.1, 1.0, 10))
    batch, info = rb.sample(return_info=True)
    assert torch.equal(batch, torch.as_tensor(info["index"]).float())
    assert info["priority_weight"].shape == (4,)


@pytest.mark.parametrize("bad", [float("nan"), -1.0])
def test_bad_priority_rejected_and_tree_unchanged(bad):
    rb = data.PrioritizedReplayBuffer(alpha=1.0, beta=1.0, storage=data.LazyTensorStorage(4), batch_size=64)
    index = rb.extend(torch.arange(4.0))
    rb.update_priority(index, torch.tensor([1.0, 0.0, 0.0, 0.0]))
    with pytest.raises(ValueError):
        rb.update_priority(index, torch.tensor([0.0, 0.0, 0.0, bad]))
    assert set(rb.sample().long().tolist()) == {0}


def test_update_tensordict_priority_needs_index():
    rb = data.TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=1.0, storage=data.LazyTensorStorage(4), batch_size=2)
    rb.extend(_td(4))
    with pytest.raises(KeyError, match="index"):
        rb.update_tensordict_priority(TensorDict(td_error=torch.ones(2), batch_size=[2]))


def test_compilable_buffer_under_torch_compile():
    rb = data.ReplayBuffer(
        storage=data.LazyTensorStorage(32, compilable=True), sampler=data.RandomSampler(), batch_size=3, compilable=True
    )

    @torch.compile(backend="eager")
    def step(x):
        rb.extend(x)
        return rb.sample() * 2

    for i in range(3):
        out = step(torch.full((10, 1), float(i)))
        assert out.shape == (3, 1)
    assert len(rb) == 30 and rb.write_count == 30
    assert set(rb[torch.arange(30)].flatten().tolist()) == {0.0, 1.0, 2.0}


def test_torchrl_only_arguments_are_refused_clearly():
    data.ReplayBuffer(sample_unit=None, delayed_init=False, transport="auto")
    with pytest.raises(ValueError, match="transport"):
        data.ReplayBuffer(transport="ray")
    with pytest.raises(TypeError, match="unexpected"):
        data.ReplayBuffer(not_an_argument=1)
    with pytest.raises(ValueError, match="sync"):
        data.TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=1.0, sync=False)
