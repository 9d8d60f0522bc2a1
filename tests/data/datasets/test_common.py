from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import ImmutableDatasetWriter, ListStorage, ReplayBuffer, TensorStorage
from tdrl.data.datasets import BaseDatasetExperienceReplay


class _Ramp(BaseDatasetExperienceReplay):
    def __init__(self, root, n=10, storage=None):
        self.root = root
        if storage is None:
            data = TensorDict({"x": torch.arange(float(n)), ("next", "x"): torch.arange(1.0, n + 1)}, [n])
            storage = TensorStorage(data.memmap(self.data_path))
        super().__init__(storage=storage, batch_size=3, writer=ImmutableDatasetWriter())

    @property
    def data_path(self) -> Path:
        return self.root / "ramp"

    @property
    def data_path_root(self) -> Path:
        return self.data_path

    def _is_downloaded(self) -> bool:
        return self.data_path.exists()


def _double(td):
    return td.set("y", td["x"] * 2).exclude("next")


def test_preprocess_in_process_writes_a_new_memmap(tmp_path):
    ds = _Ramp(tmp_path)
    assert isinstance(ds.root, Path)
    out = ds.preprocess(_double, num_workers=0, chunksize=4, dest=tmp_path / "doubled")
    assert (tmp_path / "doubled").exists()
    assert out._storage["y"].tolist() == [2.0 * i for i in range(10)]
    assert "next" not in out._storage.keys()
    rb = ReplayBuffer(storage=out, batch_size=4)
    assert rb.sample()["y"].shape == (4,)


def test_preprocess_num_frames_and_bad_values(tmp_path):
    ds = _Ramp(tmp_path)
    out = ds.preprocess(lambda td: td.set("y", td["x"] + 1), num_workers=0, num_chunks=2, num_frames=3, dest=tmp_path / "o")
    assert out._storage["y"].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match=r"num_frames must be in \[1, 10\], got 11"):
        ds.preprocess(_double, num_workers=0, num_frames=11, dest=tmp_path / "p")


def test_preprocess_with_a_worker_process(tmp_path):
    ds = _Ramp(tmp_path, n=6)
    out = ds.preprocess(lambda td: td.set("y", td["x"] - 1), num_workers=1, chunksize=3, mp_start_method="fork",
                        generator=torch.Generator().manual_seed(0), dest=tmp_path / "w")
    assert out._storage["y"].tolist() == [float(i - 1) for i in range(6)]


def test_preprocess_needs_a_tensor_storage(tmp_path):
    ds = _Ramp(tmp_path, storage=ListStorage(4))
    with pytest.raises(RuntimeError, match="TensorStorage of a TensorDict, got ListStorage"):
        ds.preprocess(_double, num_workers=0, dest=tmp_path / "x")


def test_delete_removes_the_data(tmp_path):
    ds = _Ramp(tmp_path)
    assert ds._is_downloaded()
    ds.delete()
    assert not ds._is_downloaded()


def test_preprocess_names_a_function_that_cannot_reach_workers(tmp_path):
    import threading

    lock = threading.Lock()
    ds = _Ramp(tmp_path)
    with pytest.raises(TypeError, match="fn cannot be sent to worker processes"):
        ds.preprocess(lambda td: (lock, td)[1], num_workers=1, dest=tmp_path / "z")
