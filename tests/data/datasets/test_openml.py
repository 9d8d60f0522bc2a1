from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from tdrl.data import SamplerWithoutReplacement
from tdrl.data.datasets import OpenMLExperienceReplay, load_dataset
from tdrl.data.datasets._tabular import read_arff, read_csv

sys.path.insert(0, str(Path(__file__).parent))
import dataset_files as files  # noqa: E402

GOLDEN = torch.load(Path(__file__).parent / "golden" / "openml.pt")
TABLE = {"adult_num": "adult", "adult_onehot": "adult", "mushroom_num": "mushroom", "mushroom_onehot": "mushroom",
         "magic": "MagicTelescope"}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_rows_match_torchrl_with_scikit_learn(tmp_path, name):
    files.write_openml_arff(tmp_path, TABLE[name])
    ds = OpenMLExperienceReplay(name, batch_size=4, root=tmp_path)
    data = ds._storage._storage
    torch.testing.assert_close(data["X"].clone(), GOLDEN[name]["X"])
    torch.testing.assert_close(data["y"].clone(), GOLDEN[name]["y"])
    assert ds.max_outcome_val == GOLDEN[name]["max_outcome_val"]
    assert isinstance(ds._sampler, SamplerWithoutReplacement)
    seen = torch.cat([ds.sample()["y"] for _ in range(len(ds) // 4)])
    assert seen.numel() == len(ds) // 4 * 4


def test_csv_table_and_reload(tmp_path):
    (tmp_path / "shuttle.csv").write_text("a,b,class\n1,2,x\n3,,y\n5,6,x\n")
    columns = read_csv(tmp_path / "shuttle.csv")
    assert [c.numeric for c in columns] == [True, True, False]
    ds = load_dataset("openml:shuttle", batch_size=2, root=tmp_path)
    assert ds.sample()["X"].shape == (2, 2) and ds.max_outcome_val == 1
    (tmp_path / "shuttle.csv").unlink()
    again = OpenMLExperienceReplay("shuttle", batch_size=3, root=tmp_path)
    assert again._storage._storage["y"].tolist() == [0, 1, 0]


def test_arff_reader_keeps_missing_and_quoted_values(tmp_path):
    columns = read_arff(files.write_openml_arff(tmp_path, "adult"))
    by_name = {c.name: c for c in columns}
    assert by_name["fnlwgt"].numeric and not by_name["workclass"].numeric
    assert by_name["occupation"].values[5] is None and by_name["occupation"].values[1] == "Tech-support"


def test_bad_input_is_explained(tmp_path):
    with pytest.raises(ValueError, match="unknown OpenML dataset 'iris'"):
        OpenMLExperienceReplay("iris", batch_size=2, root=tmp_path)
    with pytest.raises(FileNotFoundError) as info:
        OpenMLExperienceReplay("covertype", batch_size=2, root=tmp_path)
    assert "'covertype'" in str(info.value) and str(tmp_path / "covertype.arff") in str(info.value)
    (tmp_path / "covertype.arff").write_text("@RELATION c\n@ATTRIBUTE a NUMERIC\n@ATTRIBUTE b {x}\n@DATA\n1,x\n2\n")
    with pytest.raises(ValueError, match="data row 1 has 1 values, the header 2"):
        OpenMLExperienceReplay("covertype", batch_size=2, root=tmp_path)
    (tmp_path / "covertype.arff").write_text("@RELATION c\n@ATTRIBUTE a {p,q}\n@ATTRIBUTE b {x}\n@DATA\np,x\n")
    with pytest.raises(ValueError, match="attribute 'a' must be numeric"):
        OpenMLExperienceReplay("covertype", batch_size=2, root=tmp_path)
