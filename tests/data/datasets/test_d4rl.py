from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from tdrl.data.datasets import D4RLExperienceReplay, load_dataset

pytest.importorskip("h5py", reason="D4RL's HDF5 files need h5py (pip install 'tdrl[h5]')")
sys.path.insert(0, str(Path(__file__).parent))
import dataset_files as files  # noqa: E402

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("variant", ["plain", "next_obs", "no_timeouts"])
@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("use_trunc", [True, False])
def test_rows_match_torchrl(tmp_path, variant, split, use_trunc):
    kwargs = {"plain": {}, "next_obs": {"with_next_obs": True}, "no_timeouts": {"with_timeouts": False}}[variant]
    files.write_d4rl(tmp_path / f"{files.D4RL_ID}.hdf5", **kwargs)
    ds = D4RLExperienceReplay(files.D4RL_ID, 4, root=tmp_path, split_trajs=split, use_truncated_as_done=use_trunc)
    expected = torch.load(GOLDEN / f"d4rl_{variant}.pt")[f"split={split},trunc={use_trunc}"]
    data = ds._storage._storage
    assert set(data.keys(True, True)) == set(expected)
    for key, value in expected.items():
        got = data.get(key)
        assert got.dtype == value.dtype, key
        torch.testing.assert_close(got.clone(), value, msg=f"{key}")


def test_metadata_reload_and_sampling(tmp_path):
    files.write_d4rl(tmp_path / f"{files.D4RL_ID}.hdf5")
    ds = D4RLExperienceReplay(files.D4RL_ID, 5, root=tmp_path)
    assert ds.metadata["policy"]["fc0"]["weight"].shape == (2, 2)
    (tmp_path / f"{files.D4RL_ID}.hdf5").unlink()
    again = D4RLExperienceReplay(files.D4RL_ID, 5, root=tmp_path, download=False)
    assert len(again) == 11 and again.sample()["next", "observation"].shape == (5, 4)
    with pytest.raises(FileNotFoundError, match="hopper-medium-v2.hdf5"):
        D4RLExperienceReplay(files.D4RL_ID, 5, root=tmp_path, download="force")


def test_raw_file_is_found_in_d4rl_dataset_dir(tmp_path, monkeypatch):
    files.write_d4rl(tmp_path / "raw" / f"{files.D4RL_ID}.hdf5")
    monkeypatch.setenv("D4RL_DATASET_DIR", str(tmp_path / "raw"))
    ds = load_dataset(f"d4rl:{files.D4RL_ID}", batch_size=2, root=tmp_path / "root")
    assert isinstance(ds, D4RLExperienceReplay) and ds.data_path == tmp_path / "root" / files.D4RL_ID


def test_absent_file_and_unsupported_options_are_explained(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        D4RLExperienceReplay("walker2d-expert-v2", 4, root=tmp_path)
    assert "'walker2d-expert-v2'" in str(info.value) and str(tmp_path / "walker2d-expert-v2.hdf5") in str(info.value)
    with pytest.raises(FileNotFoundError, match="download=True"):
        D4RLExperienceReplay("walker2d-expert-v2", 4, root=tmp_path, download=False)
    for kwargs in ({"from_env": True}, {"direct_download": False}, {"terminate_on_end": True, "seed": 0}):
        with pytest.raises(ValueError, match="d4rl"):
            D4RLExperienceReplay(files.D4RL_ID, 4, root=tmp_path, **kwargs)
    with pytest.raises(ValueError, match="terminate_on_end=False"):
        D4RLExperienceReplay(files.D4RL_ID, 4, root=tmp_path, terminate_on_end=False)


def test_missing_required_entry_is_named(tmp_path):
    import h5py

    with h5py.File(tmp_path / f"{files.D4RL_ID}.hdf5", "w") as f:
        f.create_dataset("observations", data=[[0.0]])
    with pytest.raises(KeyError, match="'actions'"):
        D4RLExperienceReplay(files.D4RL_ID, 4, root=tmp_path)
