from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tdrl.data import ImmutableDatasetWriter, SamplerWithoutReplacement
from tdrl.data.datasets import MinariExperienceReplay, load_dataset
from tdrl.data.tensor_specs import Bounded, Composite

h5py = pytest.importorskip("h5py", reason="Minari's HDF5 files need h5py (pip install 'tdrl[h5]')")
sys.path.insert(0, str(Path(__file__).parent))
import dataset_files as files  # noqa: E402

GOLDEN = json.loads((Path(__file__).parent / "golden" / "minari.json").read_text())


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "minari-cache"
    files.write_minari(root)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return root


def _layout(td):
    return {"/".join((k,) if isinstance(k, str) else k): [list(v.shape), str(v.dtype)] for k, v in td.items(True, True)}


def _reference(cache_root: Path) -> dict[str, np.ndarray]:
    """The expected rows, built step by step from the HDF5 file."""
    rows: dict[str, list] = {k: [] for k in ("episode", "obs", "next_obs", "action", "reward", "term", "trunc")}
    rows.update({"success": [], "next_success": []})
    with h5py.File(cache_root / files.MINARI_ID / "data" / "main_data.hdf5") as f:
        for ep in range(len(files.MINARI_LENGTHS)):
            g = f[f"episode_{ep}"]
            for t in range(g["actions"].shape[0]):
                rows["episode"].append(ep)
                rows["obs"].append(g["observations"][t])
                rows["next_obs"].append(g["observations"][t + 1])
                rows["action"].append(g["actions"][t])
                rows["reward"].append(g["rewards"][t])
                rows["term"].append(g["terminations"][t])
                rows["trunc"].append(g["truncations"][t])
                rows["success"].append(g["infos/success"][t])
                rows["next_success"].append(g["infos/success"][t + 1])
    return {k: np.array(v) for k, v in rows.items()}


def test_rows_match_a_step_by_step_reading_of_the_file(cache, tmp_path):
    ds = MinariExperienceReplay(files.MINARI_ID, batch_size=4, root=tmp_path / "root")
    data = ds._storage._storage
    ref = _reference(cache)
    assert len(ds) == sum(files.MINARI_LENGTHS)
    np.testing.assert_array_equal(data["episode"].numpy(), ref["episode"])
    np.testing.assert_array_equal(data["observation"].numpy(), ref["obs"])
    np.testing.assert_array_equal(data["next", "observation"].numpy(), ref["next_obs"])
    np.testing.assert_array_equal(data["action"].numpy(), ref["action"])
    np.testing.assert_array_equal(data["next", "reward"].squeeze(-1).numpy(), ref["reward"])
    np.testing.assert_array_equal(data["next", "terminated"].squeeze(-1).numpy(), ref["term"])
    np.testing.assert_array_equal(data["next", "truncated"].squeeze(-1).numpy(), ref["trunc"])
    np.testing.assert_array_equal(data["next", "done"].squeeze(-1).numpy(), ref["term"] | ref["trunc"])
    np.testing.assert_array_equal(data["info", "success"].numpy(), ref["success"])
    np.testing.assert_array_equal(data["next", "info", "success"].numpy(), ref["next_success"])


def test_layout_and_metadata_match_torchrl(cache, tmp_path):
    ds = MinariExperienceReplay(files.MINARI_ID, batch_size=4, root=tmp_path / "root")
    assert _layout(ds._storage._storage) == GOLDEN["layout"]
    sample = ds.sample()
    assert sorted("/".join((k,) if isinstance(k, str) else k) for k in sample.keys(True, True)) == GOLDEN["sample_keys"]
    obs_space = ds.metadata["observation_space"]
    assert isinstance(obs_space, Bounded) and obs_space.dtype == torch.float32
    assert obs_space.space.low.tolist() == GOLDEN["observation_space"][1]
    assert ds.metadata["action_space"].space.high.tolist() == GOLDEN["action_space"][1]
    assert ds.metadata["total_steps"] == sum(files.MINARI_LENGTHS)
    assert isinstance(ds._writer, ImmutableDatasetWriter)


def test_split_trajs_pads_episodes_with_torchrl_keys(cache, tmp_path):
    ds = MinariExperienceReplay(files.MINARI_ID, batch_size=2, root=tmp_path / "root", split_trajs=True)
    data = ds._storage._storage
    assert data.shape == (3, max(files.MINARI_LENGTHS))
    assert set(_layout(data)) == set(GOLDEN["split_layout"])
    assert data["mask"].sum(-1).tolist() == list(files.MINARI_LENGTHS)
    assert data["traj_ids"][:, 0].tolist() == [0, 1, 2]
    assert ds.data_path.name.endswith("_split")


def test_reload_without_the_raw_files_and_force_rebuild(cache, tmp_path):
    root = tmp_path / "root"
    first = MinariExperienceReplay(files.MINARI_ID, batch_size=4, root=root)
    expected = first._storage._storage["observation"].clone()
    (cache / files.MINARI_ID / "data" / "main_data.hdf5").unlink()
    again = MinariExperienceReplay(files.MINARI_ID, batch_size=4, root=root, download=False)
    torch.testing.assert_close(again._storage._storage["observation"].clone(), expected)
    assert isinstance(again.metadata["observation_space"], Bounded)
    with pytest.raises(FileNotFoundError, match="main_data.hdf5"):
        MinariExperienceReplay(files.MINARI_ID, batch_size=4, root=root, download="force")


def test_dict_observations_are_nested(tmp_path, monkeypatch):
    files.write_minari(tmp_path / "c", dict_obs=True)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "c"))
    ds = MinariExperienceReplay(files.MINARI_ID, batch_size=4, root=tmp_path / "root", sampler=SamplerWithoutReplacement())
    data = ds._storage._storage
    assert data["observation", "achieved_goal"].shape == (12, 2)
    torch.testing.assert_close(data["next", "observation", "achieved_goal"][0], data["next", "observation", "observation"][0, :2] * 2)
    assert isinstance(ds.metadata["observation_space"], Composite)


def test_absent_dataset_names_id_root_and_placement(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError) as info:
        MinariExperienceReplay("D4RL/door/human-v2", batch_size=4, root=tmp_path / "root")
    message = str(info.value)
    assert "'D4RL/door/human-v2'" in message and str(tmp_path / "root") in message
    assert "minari download D4RL/door/human-v2" in message and "MINARI_DATASETS_PATH" in message
    with pytest.raises(FileNotFoundError, match="download=True"):
        MinariExperienceReplay("D4RL/door/human-v2", batch_size=4, root=tmp_path / "root", download=False)


def test_written_data_is_refused_and_load_dataset_routes(cache, tmp_path):
    ds = load_dataset(f"minari:{files.MINARI_ID}", batch_size=3, root=tmp_path / "root")
    assert isinstance(ds, MinariExperienceReplay) and ds.sample().shape == (3,)
    with pytest.raises(RuntimeError, match="doesn't allow writing"):
        ds.extend(ds.sample())


def test_mismatched_observation_length_is_named(tmp_path, monkeypatch):
    data_dir = files.write_minari(tmp_path / "c")
    with h5py.File(data_dir / "main_data.hdf5", "a") as f:
        del f["episode_1/observations"]
        f["episode_1"].create_dataset("observations", data=np.zeros((2, 3), np.float32))
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "c"))
    with pytest.raises(ValueError, match="'observations' has 2 steps, expected 4"):
        MinariExperienceReplay(files.MINARI_ID, batch_size=4, root=tmp_path / "root")
