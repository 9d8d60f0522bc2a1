from __future__ import annotations

import json
import random
import zipfile

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.checkpoint import (
    Checkpoint,
    CheckpointAdapter,
    CheckpointError,
    CheckpointOptions,
    CheckpointRotation,
    GlobalRNGState,
    StateDictCheckpointAdapter,
)
from tdrl.data import LazyTensorStorage, ReplayBuffer


def _trained():
    torch.manual_seed(0)
    policy = torch.nn.Linear(4, 2)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
    policy(torch.randn(3, 4)).sum().backward()
    opt.step()
    return policy, opt


def test_partial_restore_reports_unrequested(tmp_path):
    policy, opt = _trained()
    ckpt = Checkpoint(policy=policy, optimizer=opt, trainer_state={"frames": 128}, rng=GlobalRNGState(),
                      config={"learning_rate": 3e-4})
    path = ckpt.save(tmp_path / "step-128")
    restored = torch.nn.Linear(4, 2)
    result = Checkpoint(policy=restored).load(path, components={"policy"}, map_location="cpu")
    assert result.loaded == {"policy"}
    assert result.unrequested == {"config", "optimizer", "rng", "trainer_state"}
    assert torch.equal(restored.weight, policy.weight)
    # nothing on disk needs unpickling: JSON and raw tensor bytes only
    suffixes = {p.suffix for p in path.rglob("*") if p.is_file()}
    assert suffixes <= {".json", ".memmap"}


def test_optimizer_int_keys_and_json_components_round_trip(tmp_path):
    policy, opt = _trained()
    progress = {"frames": 7, "nested": {"x": [1, 2]}}
    path = Checkpoint(policy=policy, optimizer=opt, progress=progress).save(tmp_path / "c")
    policy2 = torch.nn.Linear(4, 2)
    opt2 = torch.optim.Adam(policy2.parameters(), lr=1.0)
    got = {}
    result = Checkpoint(policy=policy2, optimizer=opt2, progress=got).load(path)
    assert got == progress and result.values["progress"] == progress
    s1, s2 = opt.state_dict(), opt2.state_dict()
    assert s2["param_groups"][0]["lr"] == 3e-4
    assert set(s2["state"]) == {0, 1}  # integer keys survive
    assert torch.equal(s1["state"][0]["exp_avg"], s2["state"][0]["exp_avg"])


@pytest.mark.parametrize("compression", ["stored", "deflated"])
def test_archive_container(tmp_path, compression):
    policy, _ = _trained()
    ckpt = Checkpoint(policy=policy, archive_compression=compression)
    path = ckpt.save(tmp_path / "step.tdrl", format="archive")
    assert path.is_file() and zipfile.is_zipfile(path)
    assert Checkpoint.manifest(path)["container"] == "archive"
    assert Checkpoint.is_checkpoint(path) and not Checkpoint.is_checkpoint(tmp_path)
    restored = torch.nn.Linear(4, 2)
    Checkpoint(policy=restored).load(path)
    assert torch.equal(restored.bias, policy.bias)


def test_torch_payload_format_loads_weights_only(tmp_path):
    policy, _ = _trained()
    ckpt = Checkpoint().register("policy", policy, adapter=StateDictCheckpointAdapter("torch"))
    path = ckpt.save(tmp_path / "c")
    restored = torch.nn.Linear(4, 2)
    Checkpoint().register("policy", restored, adapter=StateDictCheckpointAdapter("torch")).load(path)
    assert torch.equal(restored.weight, policy.weight)
    with pytest.raises(ValueError, match="payload_format"):
        StateDictCheckpointAdapter("consolidated")


def test_strictness_missing_and_incompatible(tmp_path):
    policy, _ = _trained()
    path = Checkpoint(policy=policy).save(tmp_path / "c")
    with pytest.raises(CheckpointError, match=r"missing=\['extra'\]"):
        Checkpoint(policy=torch.nn.Linear(4, 2), extra=torch.nn.Linear(1, 1)).load(path)
    with pytest.warns(UserWarning, match="missing"):
        result = Checkpoint(policy=torch.nn.Linear(4, 2), extra={}).load(path, strict="warn")
    assert result.missing == {"extra"} and result.loaded == {"policy"}
    result = Checkpoint(policy={}, strict="ignore").load(path)  # a dict gets the JSON adapter
    assert "policy" in result.incompatible and result.loaded == set()
    with pytest.raises(CheckpointError, match="(?s)Failed to load checkpoint component 'policy'.*size mismatch"):
        Checkpoint(policy=torch.nn.Linear(4, 3)).load(path)


def test_corrupted_file_is_detected(tmp_path):
    policy, _ = _trained()
    path = Checkpoint(policy=policy).save(tmp_path / "c")
    target = next(p for p in path.rglob("*.memmap"))
    data = bytearray(target.read_bytes())
    data[0] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupted"):
        Checkpoint(policy=torch.nn.Linear(4, 2)).load(path)


def test_save_is_atomic_and_overwrites(tmp_path):
    policy, _ = _trained()
    path = Checkpoint(policy=policy, cfg={"v": 1}).save(tmp_path / "c")
    Checkpoint(cfg={"v": 2}).save(path)
    got = {}
    Checkpoint(cfg=got).load(path)
    assert got == {"v": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]  # no temp folders left behind

    class Boom:
        def state_dict(self):
            raise RuntimeError("boom")

        def load_state_dict(self, sd):
            pass

    with pytest.raises(CheckpointError, match="'bad'.*boom"):
        Checkpoint(cfg={"v": 3}, bad=Boom()).save(path)
    Checkpoint(cfg=got).load(path)
    assert got == {"v": 2}  # the failed save left the previous checkpoint intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_replay_buffer_component_through_dumps_loads(tmp_path):
    rb = ReplayBuffer(storage=LazyTensorStorage(10))
    rb.extend(TensorDict({"a": torch.arange(4.0)}, [4]))
    path = Checkpoint(rb=rb).save(tmp_path / "c")
    rb2 = ReplayBuffer(storage=LazyTensorStorage(10))
    result = Checkpoint(rb=rb2).load(path)
    assert result.loaded == {"rb"} and len(rb2) == 4
    assert torch.equal(rb2[:]["a"], torch.arange(4.0))


def test_global_rng_state_restores_every_generator(tmp_path):
    path = Checkpoint(rng=GlobalRNGState()).save(tmp_path / "c")
    expected = (random.random(), float(np.random.rand()), float(torch.rand(())))
    Checkpoint(rng=GlobalRNGState()).load(path)
    assert (random.random(), float(np.random.rand()), float(torch.rand(()))) == expected


def test_custom_adapter_and_type_registration(tmp_path):
    class Cursor:
        def __init__(self, offset=0):
            self.offset = offset

    class CursorAdapter(CheckpointAdapter):
        adapter_id = "test.cursor"

        def save(self, component, path, *, args, kwargs):
            path.mkdir(parents=True, exist_ok=True)
            (path / "cursor.json").write_text(json.dumps([component.offset, *args, kwargs]))

        def load(self, component, path, *, map_location, tensor_load_kwargs, args, kwargs):
            component.offset = json.loads((path / "cursor.json").read_text())[0]

    path = Checkpoint().register("cursor", Cursor(7), adapter=CursorAdapter(),
                                 options=CheckpointOptions(save_args=(1,), save_kwargs={"k": 2})).save(tmp_path / "c")
    saved = json.loads(next(path.rglob("cursor.json")).read_text())
    assert saved == [7, 1, {"k": 2}]
    restored = Cursor()
    Checkpoint(cursor=restored).register_adapter(Cursor, CursorAdapter()).load(path)
    assert restored.offset == 7
    with pytest.raises(CheckpointError, match="no checkpoint adapter for a Cursor"):
        Checkpoint(cursor=Cursor()).save(tmp_path / "d")


def test_manifest_versions_and_migration(tmp_path):
    path = Checkpoint(cfg={"a": 1}).save(tmp_path / "c", metadata={"step": 3})
    manifest = Checkpoint.manifest(path)
    assert manifest["metadata"] == {"step": 3} and manifest["format_version"] == 1
    raw = json.loads((path / "manifest.json").read_text())
    raw["format_version"] = 0
    (path / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(CheckpointError, match="no migration"):
        Checkpoint.manifest(path)
    Checkpoint.register_migration(0, lambda m: {**m, "format_version": 1, "migrated": True})
    try:
        assert Checkpoint.manifest(path)["migrated"] is True
    finally:
        Checkpoint._MIGRATIONS.pop(0)


def test_archive_with_escaping_member_is_rejected(tmp_path):
    path = Checkpoint(cfg={"a": 1}).save(tmp_path / "c.tdrl", format="archive")
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("../evil.txt", "x")
    with pytest.raises(CheckpointError, match="outside"):
        Checkpoint(cfg={}).load(path)
    assert not (tmp_path.parent / "evil.txt").exists()


def test_bad_arguments():
    with pytest.raises(ValueError, match="format"):
        Checkpoint(format="tar")
    with pytest.raises(ValueError, match="strict"):
        Checkpoint(strict="maybe")
    with pytest.raises(ValueError, match="component name"):
        Checkpoint().register("a/b", {})


def test_rotation_keeps_last_and_best(tmp_path):
    ckpt = Checkpoint(cfg={"v": 0})
    rotation = CheckpointRotation(tmp_path / "rot", keep_last=2, keep_best=("loss", "min"))
    for step, loss in enumerate([3.0, 0.5, 2.0, 4.0]):
        ckpt.register("cfg", {"v": step})
        rotation.save(ckpt, step=step, metadata={"loss": loss})
    names = [p.name for p in rotation.checkpoints()]
    assert names == ["checkpoint-000000000001", "checkpoint-000000000002", "checkpoint-000000000003"]
    assert rotation.best().name == "checkpoint-000000000001"
    got = {}
    rotation.load_latest(Checkpoint(cfg=got))
    assert got == {"v": 3}
    with pytest.raises(CheckpointError, match="keep_best"):
        rotation.save(ckpt, step=9)
    with pytest.raises(CheckpointError, match="no checkpoint"):
        CheckpointRotation(tmp_path / "empty", keep_last=1).load_latest(ckpt)
    with pytest.raises(ValueError, match="keep_last"):
        CheckpointRotation(tmp_path, keep_last=0)
