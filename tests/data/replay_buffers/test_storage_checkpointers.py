"""Storage checkpointers and the compact TED layouts (TED2Flat & co), golden-tested against TorchRL 0.14.1."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import (
    CompressedListStorage,
    CompressedListStorageCheckpointer,
    Flat2TED,
    FlatStorageCheckpointer,
    H5StorageCheckpointer,
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    ListStorageCheckpointer,
    Nested2TED,
    NestedStorageCheckpointer,
    ReplayBuffer,
    StorageEnsemble,
    StorageEnsembleCheckpointer,
    TED2Flat,
    TED2Nested,
    TensorDictReplayBuffer,
    TensorStorageCheckpointer,
)

_GOLDEN = Path(__file__).parent / "golden"


def _recorder():
    spec = importlib.util.spec_from_file_location("record_ted", _GOLDEN / "record_ted.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ted2flat_layout_matches_torchrl_golden():
    expected = json.loads((_GOLDEN / "ted_torchrl_0_14_1.json").read_text())
    assert json.loads(json.dumps(_recorder().cases())) == expected


@pytest.mark.parametrize("shift", [10, 3, 7])
def test_flat_and_nested_round_trip(shift):
    chronological = _trajectories(10)
    data = chronological.roll(shift % 10, dims=0)  # a full ring buffer whose next write goes to row `shift`
    for to, back in ((TED2Flat(), Flat2TED()), (TED2Nested(), Nested2TED())):
        to.shift, to.is_full = shift, True
        restored = back(to(data))
        for key in data.keys(True, True):
            assert torch.equal(restored.get(key), data.get(key)), (type(to).__name__, key)
        assert not restored.get("done").any()  # root done flags come back False


def _trajectories(n: int) -> TensorDict:
    done = torch.zeros(n, 1, dtype=torch.bool)
    done[3::4] = True
    obs = torch.randn(n + 1, 3)
    return TensorDict(
        {
            "observation": obs[:-1],
            "action": torch.randn(n, 2),
            "done": torch.zeros(n, 1, dtype=torch.bool),
            ("next", "observation"): obs[1:],
            ("next", "done"): done,
            ("next", "reward"): torch.randn(n, 1),
        },
        [n],
    )


_CHECKPOINTERS = [
    TensorStorageCheckpointer,
    FlatStorageCheckpointer,
    NestedStorageCheckpointer,
    H5StorageCheckpointer,
]


@pytest.mark.parametrize("make_checkpointer", _CHECKPOINTERS)
@pytest.mark.parametrize("writes", [7, 16, 21])  # partly filled, exactly full, wrapped around
def test_buffer_round_trips_through_checkpointer(tmp_path, make_checkpointer, writes):
    def build():
        return TensorDictReplayBuffer(
            storage=LazyTensorStorage(16), checkpointer=make_checkpointer(), batch_size=4
        )

    rb = build()
    data = _trajectories(writes)
    # TED consistency across the ring seam: obs(t+1) == next obs(t) inside a trajectory
    data["next", "done"][-1] = True
    rb.extend(data)
    rb.dumps(tmp_path / "ckpt")
    copy = build()
    copy.loads(tmp_path / "ckpt")
    assert len(copy) == len(rb)
    original, restored = rb[:], copy[:]
    for key in ("observation", "action", ("next", "observation"), ("next", "done"), ("next", "reward")):
        assert torch.equal(original.get(key), restored.get(key)), key
    extra = _trajectories(3)  # the write cursor came back too: the next writes land on the same rows
    rb.extend(extra)
    copy.extend(extra)
    assert torch.equal(copy[:]["observation"], rb[:]["observation"])


def test_h5_file_layout_and_kwargs(tmp_path):
    h5py = pytest.importorskip("h5py")
    rb = ReplayBuffer(
        storage=LazyMemmapStorage(8), checkpointer=H5StorageCheckpointer(h5_kwargs={"compression": "gzip"})
    )
    rb.extend(_trajectories(8))
    rb.dumps(tmp_path)
    (file,) = tmp_path.rglob("checkpoint.h5")
    with h5py.File(file) as handle:
        assert sorted(k for k in handle if k.startswith("traj")) == ["traj_0", "traj_1"]
        assert handle["traj_0"]["observation"].shape == (5, 3)  # 4 steps + the final next observation
        assert handle["traj_0"]["observation"].compression == "gzip"


def test_save_and_load_hooks_on_buffer(tmp_path):
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(8))
    rb.register_save_hook(TED2Flat())
    rb.register_load_hook(Flat2TED())
    rb.extend(_trajectories(8))
    rb.dumps(tmp_path)
    copy = TensorDictReplayBuffer(storage=LazyTensorStorage(8))
    copy.register_save_hook(TED2Flat())
    copy.register_load_hook(Flat2TED())
    copy.loads(tmp_path)
    assert torch.equal(copy[:]["next", "observation"], rb[:]["next", "observation"])


def test_native_layout_checkpointers(tmp_path):
    storage = ListStorage(4)
    storage.set(range(3), [torch.tensor(i) for i in range(3)])
    ListStorageCheckpointer().dumps(storage, tmp_path / "list")
    copy = ListStorage(4)
    ListStorageCheckpointer().loads(copy, tmp_path / "list")
    assert [int(x) for x in copy] == [0, 1, 2]
    compressed = CompressedListStorage(4)
    compressed.set(range(2), [torch.ones(3), torch.zeros(3)])
    CompressedListStorageCheckpointer().dumps(compressed, tmp_path / "compressed")
    back = CompressedListStorage(4)
    CompressedListStorageCheckpointer().loads(back, tmp_path / "compressed")
    assert torch.equal(back[0], torch.ones(3))
    ensemble = StorageEnsemble(LazyTensorStorage(4), LazyTensorStorage(4))
    ensemble[0].set(torch.arange(2), torch.arange(2) + 5)
    StorageEnsembleCheckpointer().dumps(ensemble, tmp_path / "ensemble")
    other = StorageEnsemble(LazyTensorStorage(4), LazyTensorStorage(4))
    StorageEnsembleCheckpointer().loads(other, tmp_path / "ensemble")
    assert other[0][:].tolist() == [5, 6] and len(other[1]) == 0


def test_bad_inputs():
    with pytest.raises(TypeError, match="dumps/loads"):
        LazyTensorStorage(3).checkpointer = object()
    with pytest.raises(RuntimeError, match="non-initialized"):
        FlatStorageCheckpointer().dumps(LazyTensorStorage(3), "/tmp/unused")
    hook = TED2Flat()
    with pytest.raises(ValueError, match="one-dimensional"):
        hook(TensorDict({("next", "done"): torch.zeros(2, 2, 1, dtype=torch.bool)}, [2, 2]))
