"""Integrity: a truncated, empty or corrupted checkpoint file is a clear error naming the file, never zeros.

Buffer checkpoints carry a manifest of per-file sizes and CRC-32s; trainer checkpoints a CRC-32 trailer.
Checkpoints written by main at 6c19787 (``data/format1_*``, see ``make_format1_fixtures.py``) still load,
with their leaf files' sizes checked.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data
from tdrl._utils.safe_files import CheckpointError
from tdrl.data.replay_buffers.checkpointers import resolve_checkpoint
from tdrl.trainers.checkpoint import load_checkpoint, save_checkpoint

FIXTURES = Path(__file__).parent / "data"
STORAGES = {
    "LazyTensorStorage": lambda: data.LazyTensorStorage(16),
    "LazyMemmapStorage": lambda: data.LazyMemmapStorage(16),
    "ListStorage": lambda: data.ListStorage(16),
    "CompressedListStorage": lambda: data.CompressedListStorage(16),
}


def _items(n: int = 5) -> TensorDict:
    return TensorDict({"obs": torch.arange(2.0 * n).view(n, 2), ("next", "reward"): torch.full((n, 1), 7.0),
                       "step": torch.arange(n)}, batch_size=[n])


def _buffer(storage, sampler=None) -> data.TensorDictReplayBuffer:
    return data.TensorDictReplayBuffer(storage=storage, sampler=sampler or data.RandomSampler(), batch_size=2)


def _dump(tmp_path: Path, name: str) -> Path:
    rb = _buffer(STORAGES[name]())
    rb.extend(_items())
    rb.dumps(tmp_path / "ckpt")
    return resolve_checkpoint(tmp_path / "ckpt")


def _data_file(snap: Path) -> Path:
    """The file holding the stored items (the largest of the storage folder)."""
    return max((p for p in (snap / "storage").rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


@pytest.mark.parametrize("name", sorted(STORAGES))
@pytest.mark.parametrize("damage", ["empty", "truncated", "flipped"])
def test_damaged_storage_file_is_an_error_naming_it(tmp_path, name, damage):
    snap = _dump(tmp_path, name)
    file = _data_file(snap)
    raw = bytearray(file.read_bytes())
    if damage == "empty":
        raw = bytearray()
    elif damage == "truncated":
        raw = raw[: len(raw) // 2]
    else:
        raw[len(raw) // 2] ^= 0xFF
    file.write_bytes(bytes(raw))
    rb = _buffer(STORAGES[name]())
    with pytest.raises(CheckpointError, match=rf"{file.name}.*(empty|truncated|corrupted)"):
        rb.loads(tmp_path / "ckpt")
    assert len(rb) == 0  # nothing half-loaded


def test_truncated_leaf_never_loads_as_zeros(tmp_path):
    """Issue 13: a zero-length leaf came back as zeros with the length unchanged (reward 7.0 -> 0.0)."""
    snap = _dump(tmp_path, "LazyTensorStorage")
    for file in (snap / "storage").rglob("*"):
        if file.is_file() and file.stat().st_size == 5 * 4:  # the reward leaf: 5 float32 rows
            file.write_bytes(b"")
    rb = _buffer(data.LazyTensorStorage(16))
    with pytest.raises(CheckpointError, match="empty"):
        rb.loads(tmp_path / "ckpt")


@pytest.mark.parametrize("make_sampler", [lambda: data.PrioritizedSampler(16, alpha=0.7, beta=0.5),
                                          data.SamplerWithoutReplacement])
def test_every_file_of_a_checkpoint_is_verified(tmp_path, make_sampler):
    rb = _buffer(data.LazyTensorStorage(16), make_sampler())
    rb.extend(_items())
    rb.dumps(tmp_path / "ckpt")
    snap = resolve_checkpoint(tmp_path / "ckpt")
    files = [p for p in snap.rglob("*") if p.is_file() and p.name != "MANIFEST.json"]
    assert len(files) >= 6
    for file in files:
        original = file.read_bytes()
        flipped = bytearray(original)
        flipped[len(flipped) // 2] ^= 0x01
        file.write_bytes(bytes(flipped))
        with pytest.raises(CheckpointError, match=file.name):
            _buffer(data.LazyTensorStorage(16), make_sampler()).loads(tmp_path / "ckpt")
        file.write_bytes(original)
    _buffer(data.LazyTensorStorage(16)).loads(tmp_path / "ckpt")  # intact again


@pytest.mark.parametrize("content", [b"", b"{garbage", b'{"current": "../../etc"}', b"[1, 2]"])
def test_bad_latest_pointer_names_the_file(tmp_path, content):
    _dump(tmp_path, "LazyTensorStorage")
    (tmp_path / "ckpt" / "LATEST").write_bytes(content)
    with pytest.raises(CheckpointError, match=r"LATEST"):
        _buffer(data.LazyTensorStorage(16)).loads(tmp_path / "ckpt")


def _format1_copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    (resolve_checkpoint(target) / "sampler").mkdir(exist_ok=True)  # git keeps no empty folder
    return target


@pytest.mark.parametrize("name,storage", [("format1_tensor_buffer", "LazyTensorStorage"),
                                          ("format1_tensor_buffer", "LazyMemmapStorage"),
                                          ("format1_list_buffer", "ListStorage")])
def test_format1_checkpoints_from_6c19787_still_load(tmp_path, name, storage):
    rb = _buffer(STORAGES[storage]())
    rb.loads(_format1_copy(tmp_path, name))
    assert len(rb) == 5 and rb._writer._cursor == 5
    got = rb[torch.arange(5)]
    assert torch.equal(got["next", "reward"], torch.full((5, 1), 7.0)) and got["step"].tolist() == list(range(5))


@pytest.mark.parametrize("damage", ["empty", "truncated"])
def test_damaged_format1_leaf_is_an_error_naming_it(tmp_path, damage):
    root = _format1_copy(tmp_path, "format1_tensor_buffer")
    leaf = resolve_checkpoint(root) / "storage" / "data" / "next" / "reward.memmap"
    leaf.write_bytes(b"" if damage == "empty" else leaf.read_bytes()[:10])
    with pytest.raises(CheckpointError, match=rf"reward\.memmap is {damage}"):
        _buffer(data.LazyTensorStorage(16)).loads(root)


def test_garbage_format1_metadata_names_the_file(tmp_path):
    root = _format1_copy(tmp_path, "format1_tensor_buffer")
    (resolve_checkpoint(root) / "storage" / "data" / "meta.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=r"meta\.json is not valid JSON"):
        _buffer(data.LazyTensorStorage(16)).loads(root)


@pytest.mark.parametrize("damage", ["empty", "truncated", "flipped"])
def test_damaged_trainer_checkpoint_is_an_error_naming_it(tmp_path, damage):
    path = save_checkpoint({"weights": torch.arange(1000.0)}, tmp_path / "checkpoint.pt")
    raw = bytearray(path.read_bytes())
    if damage == "empty":
        raw = bytearray()
    elif damage == "truncated":
        raw = raw[: len(raw) - 100]
    else:
        raw[len(raw) // 2] ^= 0x01  # inside the tensor bytes, which torch's reader does not check
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=r"checkpoint\.pt is (empty|truncated|corrupted|not a readable)"):
        load_checkpoint(path)


def test_damaged_trainer_checkpoint_falls_back_to_the_previous_one(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint({"step": 1}, path)
    save_checkpoint({"step": 2, "weights": torch.arange(100.0)}, path)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    path.write_bytes(bytes(raw))
    assert load_checkpoint(path)["step"] == 1


def test_format1_trainer_checkpoint_still_loads(tmp_path):
    shutil.copy(FIXTURES / "format1_checkpoint.pt", tmp_path / "checkpoint.pt")
    state = load_checkpoint(tmp_path / "checkpoint.pt")
    assert state["step"] == 3 and torch.equal(state["weights"], torch.arange(4.0))
