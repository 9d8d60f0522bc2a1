from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tdrl.data import SamplerWithoutReplacement, SliceSampler, SliceSamplerWithoutReplacement
from tdrl.data.datasets import AtariDQNExperienceReplay, load_dataset

sys.path.insert(0, str(Path(__file__).parent))
import dataset_files as files  # noqa: E402

GOLDEN = torch.load(Path(__file__).parent / "golden" / "atari_dqn.pt")


@pytest.fixture
def root(tmp_path):
    files.write_atari_dqn(tmp_path / "dqn", steps=7)
    return tmp_path


def test_rows_match_torchrl(root):
    ds = AtariDQNExperienceReplay("Pong/5", 4, root=root)
    rows = ds[torch.arange(7)]
    assert set(rows.exclude("metadata").keys(True, True)) == set(GOLDEN["rows"])
    for key, value in GOLDEN["rows"].items():
        assert rows.get(key).dtype == value.dtype, key
        torch.testing.assert_close(rows.get(key), value, msg=key)
    assert rows["metadata"] == GOLDEN["metadata"]
    single = ds[3]
    assert single.batch_size == () and int(single["next", "done"]) == 1
    assert single["next", "observation"].abs().sum() == 0


def test_episodes_keep_the_terminal_step_in_its_episode(root):
    ds = AtariDQNExperienceReplay("Pong/5", 4, root=root)
    # TorchRL's cumsum puts the terminal step (row 3) into the following episode.
    assert GOLDEN["episodes"].tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert ds.episodes.tolist() == [0, 0, 0, 0, 1, 1, 1]


def test_rows_across_checkpoints_in_any_order(root):
    logs = root / "dqn" / "Pong" / "5" / "replay_logs"
    for src in list(logs.glob("*ckpt.0.gz")):
        (logs / src.name.replace("ckpt.0", "ckpt.1")).write_bytes(src.read_bytes())
    with gzip.open(logs / "add_count_ckpt.1.gz", "wb") as f:
        np.save(f, np.array(7))
    ds = AtariDQNExperienceReplay("Pong/5", 4, root=root, download="force")
    assert len(ds) == 14
    rows = ds[torch.tensor([9, 2, 13, 0])]
    torch.testing.assert_close(rows["action"], GOLDEN["rows"]["action"][[2, 2, 6, 0]])
    torch.testing.assert_close(rows["next", "observation"], GOLDEN["rows"]["next", "observation"][[2, 2, 6, 0]])
    assert rows[0]["metadata"]["counters"] == {"0": {}, "1": {"add_count": 7}}
    assert ds.episodes.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2]


def test_samplers_follow_the_arguments(root):
    assert isinstance(AtariDQNExperienceReplay("Pong/5", 4, root=root, slice_len=2)._sampler, SliceSampler)
    no_rep = AtariDQNExperienceReplay("Pong/5", 4, root=root, num_slices=2, replacement=False)
    assert isinstance(no_rep._sampler, SliceSamplerWithoutReplacement)
    plain = load_dataset("atari:Pong/5", batch_size=7, root=root, replacement=False, download=False)
    assert isinstance(plain._sampler, SamplerWithoutReplacement)
    assert sorted(plain.sample()["action"].tolist()) == sorted(GOLDEN["rows"]["action"].tolist())
    with pytest.raises(RuntimeError, match="doesn't allow writing"):
        plain.extend(plain.sample())


def test_bad_input_is_explained(tmp_path):
    with pytest.raises(ValueError, match="'<Game>/<run>'.*got 'Pong'"):
        AtariDQNExperienceReplay("Pong", 4, root=tmp_path)
    with pytest.raises(FileNotFoundError) as info:
        AtariDQNExperienceReplay("Pong/5", 4, root=tmp_path)
    assert str(tmp_path / "dqn" / "Pong" / "5" / "replay_logs") in str(info.value) and "gsutil" in str(info.value)
    with pytest.raises(FileNotFoundError, match="download=True"):
        AtariDQNExperienceReplay("Pong/5", 4, root=tmp_path, download=False)
    files.write_atari_dqn(tmp_path / "dqn", steps=3)
    (tmp_path / "dqn" / "Pong" / "5" / "replay_logs" / "$store$_action_ckpt.0.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"lacks its '\$store\$_action' file"):
        AtariDQNExperienceReplay("Pong/5", 4, root=tmp_path)
