from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import (
    LazyTensorStorage,
    ListStorage,
    OfflineToOnlineReplayBuffer,
    ReplayBuffer,
    SamplerWithoutReplacement,
    TensorDictReplayBuffer,
    prefill_replay_buffer,
)


def _offline(n=40, value=0.0, sampler=None):
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(n), sampler=sampler)
    rb.extend(TensorDict({"obs": torch.full((n, 2), value), "id": torch.arange(n)}, [n]))
    return rb


def _online_rows(n=6):
    return TensorDict({"obs": torch.ones(n, 2), "id": torch.arange(100, 100 + n)}, [n])


@pytest.mark.parametrize(("fraction", "batch", "n_off"), [(0.5, 8, 4), (0.3, 10, 3), (0.26, 4, 1), (0.9, 4, 4)])
def test_each_batch_has_the_exact_offline_share(fraction, batch, n_off):
    rb = OfflineToOnlineReplayBuffer(_offline(), online_capacity=20, offline_fraction=fraction, batch_size=batch)
    rb.extend(_online_rows())
    for _ in range(5):
        out = rb.sample()
        assert out.batch_size == (batch,)
        assert (out["obs"][:, 0] == 0).sum() == n_off
        assert (out["obs"][:n_off, 0] == 0).all()
        assert "index" not in out.keys() or n_off == batch


def test_empty_online_annealed_to_zero_and_transform():
    rb = OfflineToOnlineReplayBuffer(_offline(), online_storage=ListStorage(10), offline_fraction=0.5,
                                     transform=lambda td: td.set("seen", torch.ones(td.shape[0])))
    assert rb.sample(6)["obs"].sum() == 0  # online empty: offline only
    rb.extend(_online_rows())
    rb.anneal(10, 10)
    assert rb.offline_fraction == 0.0
    out = rb.sample(6)
    assert (out["obs"] == 1).all() and out["seen"].sum() == 6
    rb.anneal(2, 8)
    assert rb.offline_fraction == pytest.approx(0.375)
    assert len(rb) == 46 and "online_size=6" in repr(rb)
    assert isinstance(rb.online_buffer, ReplayBuffer) and rb.offline_buffer is not None


def test_string_dataset_is_built_with_load_dataset(tmp_path, monkeypatch):
    pytest.importorskip("h5py", reason="the D4RL file needs h5py (pip install 'tdrl[h5]')")
    sys.path.insert(0, str(Path(__file__).parents[1] / "datasets"))
    import dataset_files as files

    files.write_d4rl(tmp_path / f"{files.D4RL_ID}.hdf5")
    rb = OfflineToOnlineReplayBuffer(f"d4rl:{files.D4RL_ID}", online_capacity=10, batch_size=4, root=tmp_path)
    assert rb.offline_buffer.batch_size == 4 and rb.sample()["observation"].shape == (4, 4)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("D4RL_DATASET_DIR", str(tmp_path))
    filled = prefill_replay_buffer(TensorDictReplayBuffer(storage=LazyTensorStorage(20)), f"d4rl:{files.D4RL_ID}",
                                   n_samples=7, chunk_size=3)
    assert len(filled) == 7


def test_prefill_copies_in_chunks_up_to_the_dataset_length():
    dataset = _offline(12, sampler=SamplerWithoutReplacement())
    rb = prefill_replay_buffer(TensorDictReplayBuffer(storage=LazyTensorStorage(50)), dataset, chunk_size=5)
    assert len(rb) == 12
    assert sorted(rb[:]["id"].tolist()) == list(range(12))  # without replacement: each row once
    again = prefill_replay_buffer(TensorDictReplayBuffer(storage=LazyTensorStorage(50)), dataset, n_samples=100)
    assert len(again) == 12


def test_bad_arguments_are_explained():
    with pytest.raises(ValueError, match="exactly one of online_storage and online_capacity"):
        OfflineToOnlineReplayBuffer(_offline(), offline_fraction=0.5)
    with pytest.raises(ValueError, match="exactly one"):
        OfflineToOnlineReplayBuffer(_offline(), online_capacity=3, online_storage=ListStorage(3))
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match=r"offline_fraction must be in \(0, 1\)"):
            OfflineToOnlineReplayBuffer(_offline(), online_capacity=3, offline_fraction=bad)
    with pytest.raises(ValueError, match="batch_size is needed"):
        OfflineToOnlineReplayBuffer("d4rl:x", online_capacity=3)
    with pytest.raises(ValueError, match=r"\['root'\] are only used"):
        OfflineToOnlineReplayBuffer(_offline(), online_capacity=3, root="/tmp")
    with pytest.raises(ValueError, match="batch_size must be given"):
        OfflineToOnlineReplayBuffer(_offline(), online_capacity=3).sample()
    with pytest.raises(ValueError, match="chunk_size must be positive"):
        prefill_replay_buffer(ReplayBuffer(storage=ListStorage(3)), _offline(), chunk_size=0)
