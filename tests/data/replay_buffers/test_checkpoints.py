"""Atomic, pickle-free checkpoints."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data
from tdrl.data.replay_buffers import checkpointers


def _rb(storage) -> data.TensorDictReplayBuffer:
    return data.TensorDictReplayBuffer(storage=storage, batch_size=2)


@pytest.mark.parametrize("make_storage", [lambda: data.LazyTensorStorage(10), lambda: data.ListStorage(10)])
def test_crash_mid_dump_keeps_previous_checkpoint(tmp_path, monkeypatch, make_storage):
    rb = _rb(make_storage())
    rb.extend(TensorDict(x=torch.arange(4.0), batch_size=[4]))
    rb.dumps(tmp_path)
    rb.extend(TensorDict(x=torch.arange(10.0, 13.0), batch_size=[3]))

    def crash(*args, **kwargs):
        raise OSError("disk full (simulated)")

    # The writer's state is saved after the storage: the crash happens halfway through the snapshot.
    monkeypatch.setattr(checkpointers, "save_json", crash)
    monkeypatch.setattr(data.replay_buffers.writers, "save_json", crash)
    with pytest.raises(OSError, match="simulated"):
        rb.dumps(tmp_path)
    monkeypatch.undo()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    restored = _rb(make_storage())
    restored.loads(tmp_path)
    assert len(restored) == 4 and restored._writer._cursor == 4
    assert restored[torch.arange(4)]["x"].tolist() == [0.0, 1.0, 2.0, 3.0]
    # And a later successful dump replaces it, leaving one snapshot.
    rb.dumps(tmp_path)
    restored.loads(tmp_path)
    assert len(restored) == 7
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("ckpt-")]) == 1


def test_loading_never_unpickles_arbitrary_objects(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    torch.save({"_storage": [Evil()]}, tmp_path / "storage.pt")
    with pytest.raises(Exception, match="(?i)weights_only|unsupported|global"):
        checkpointers.load_tensors(tmp_path / "storage.pt")


def test_missing_checkpoint_is_clear(tmp_path):
    rb = _rb(data.LazyTensorStorage(4))
    with pytest.raises(FileNotFoundError, match="LATEST"):
        rb.loads(tmp_path / "nothing")


def test_storage_dumps_loads_standalone(tmp_path):
    storage = data.LazyMemmapStorage(6)
    storage.set(torch.arange(3), TensorDict({("a", "b"): torch.ones(3, 2)}, batch_size=[3]))
    storage.dumps(tmp_path)
    other = data.LazyTensorStorage(6)
    other.loads(tmp_path)
    assert len(other) == 3 and other.get(torch.tensor([2]))["a", "b"].tolist() == [[1.0, 1.0]]


def test_prioritized_buffer_checkpoint_keeps_priorities(tmp_path):
    rb = data.TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=1.0, storage=data.LazyTensorStorage(8), batch_size=64)
    rb.extend(TensorDict(x=torch.arange(8.0), td_error=torch.tensor([0.0] * 7 + [1.0]), batch_size=[8]))
    rb.dumps(tmp_path)
    other = data.TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=1.0, storage=data.LazyTensorStorage(8), batch_size=64)
    other.loads(tmp_path)
    torch.manual_seed(0)
    assert set(other.sample()["index"].tolist()) == {7}
