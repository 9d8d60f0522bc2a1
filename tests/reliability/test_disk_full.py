"""Disk full and I/O errors: a Python error that says what, where, how many bytes, and that the previous
checkpoint is intact; no temporary files left behind; the in-memory buffer keeps working.

Full disks are a 2 MiB tmpfs (skipped where mounting is not permitted) and ``RLIMIT_FSIZE`` (a per-file size
limit: writes fail with ``EFBIG``). Writers run in a subprocess, so that a crash (the ``SIGBUS`` of memmap
writes on main at 6c19787) fails the test instead of killing pytest.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data
from tdrl._utils import safe_files
from tdrl._utils.safe_files import CheckpointWriteError
from tdrl.trainers.checkpoint import ensure_room_to_resume, load_checkpoint, save_checkpoint
from tdrl.trainers.cli import main as cli_main

# (items before the first dump, items at the second, floats per item): 256 KB then 2.56 MB of observations;
# list storages hold few large items (they pay per item).
SIZES = {"memmap": (1000, 10_000, 64), "list": (10, 50, 16_384)}


def _mount_tmpfs(mount_point: Path) -> str | None:
    """Mounts a 2 MiB tmpfs at ``mount_point``; returns why not, if it cannot."""
    mount_point.mkdir(parents=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "mounting a tmpfs needs root"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    return None if done.returncode == 0 else f"cannot mount a tmpfs here: {done.stderr.strip()}"


_WRITER = """
import json, resource, sys, torch
from pathlib import Path
from tensordict import TensorDict
import tdrl.data as data
from tdrl._utils import safe_files
from tdrl.data.replay_buffers import checkpointers
from tdrl.trainers.checkpoint import save_checkpoint

def error(fn):
    try:
        fn()
    except Exception as err:
        return {"error": type(err).__name__, "message": str(err), "errno": getattr(err, "errno", None),
                "disk_full": getattr(err, "disk_full", None)}
    return {"error": None}

def buffer_case(root, mode, small, big, width):
    storage = data.ListStorage(big) if mode.endswith("list") else data.LazyMemmapStorage(big)
    rb = data.TensorDictReplayBuffer(storage=storage, batch_size=4)
    rb.extend(TensorDict(obs=torch.ones(small, width), batch_size=[small]))
    rb.dumps(root)                                      # the previous checkpoint: fits
    rb.extend(TensorDict(obs=torch.full((big - small, width), 2.0), batch_size=[big - small]))
    check = safe_files.ensure_free_space
    if mode.startswith("nocheck"):                      # another process filled the disk after the space check
        safe_files.ensure_free_space = checkpointers.ensure_free_space = lambda *a, **k: None
    if mode.startswith("fsize"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (512 * 1024, resource.RLIM_INFINITY))
    out = error(lambda: rb.dumps(root))
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    safe_files.ensure_free_space = checkpointers.ensure_free_space = check
    out["sample_ok"] = rb.sample()["obs"].shape == (4, width) and len(rb) == big
    return out

def trainer_case(path):
    save_checkpoint({"step": 1, "w": torch.ones(1000)}, path)
    return error(lambda: save_checkpoint({"step": 2, "w": torch.ones(1_000_000)}, path))  # 4 MB on 2 MiB

def scratch_case(where):
    storage = data.LazyMemmapStorage(100_000, scratch_dir=where / "scratch")   # 25.6 MB on 2 MiB
    out = error(lambda: storage.set(torch.arange(2), TensorDict(obs=torch.ones(2, 64), batch_size=[2])))
    return out

results = {}
for case in json.loads(sys.argv[1]):
    if case[0] == "scratch":
        results["scratch"] = scratch_case(Path(case[1]))
    elif case[0] == "trainer":
        results["trainer"] = trainer_case(Path(case[1]))
    else:
        results[case[0]] = buffer_case(Path(case[1]), case[0], *case[2:])
print(json.dumps(results))
"""

BUFFER_MODES = ["check-memmap", "nocheck-memmap", "nocheck-list", "fsize-memmap", "fsize-list"]


@pytest.fixture(scope="module")
def writer_results(tmp_path_factory) -> tuple[dict, dict, dict]:
    """Runs every full-disk case in one subprocess (starting Python with torch is the slow part)."""
    base = tmp_path_factory.mktemp("disk_full")
    cases, roots, skipped, mounts = [], {}, {}, []
    for mode in [*BUFFER_MODES, "trainer", "scratch"]:
        where = base / mode
        if mode.startswith("fsize"):
            where.mkdir()
        else:
            reason = _mount_tmpfs(where)
            if reason is not None:
                skipped[mode] = reason
                continue
            mounts.append(where)
        roots[mode] = where if mode == "scratch" else where / ("checkpoint.pt" if mode == "trainer" else "ckpt")
        sizes = [] if mode in ("trainer", "scratch") else list(SIZES[mode.rpartition("-")[2]])
        cases.append([mode, str(roots[mode]), *sizes])
    try:
        done = subprocess.run([sys.executable, "-c", _WRITER, json.dumps(cases)], capture_output=True, text=True,
                              timeout=280)
        assert done.returncode == 0, f"the writer died (exit {done.returncode}): {done.stderr[-3000:]}"
        yield json.loads(done.stdout.strip().splitlines()[-1]), roots, skipped
    finally:
        for where in mounts:
            subprocess.run(["umount", "-l", str(where)], check=False)


def _case(writer_results, mode: str) -> tuple[dict, Path]:
    results, roots, skipped = writer_results
    if mode in skipped:
        pytest.skip(skipped[mode])
    return results[mode], roots[mode]


def _assert_clean_failure(root: Path, out: dict, mode: str) -> None:
    small, big, _ = SIZES[mode.rpartition("-")[2]]
    assert out["error"] == "CheckpointWriteError", out
    message = out["message"]
    assert str(root) in message and "bytes" in message and "intact" in message, message
    assert out["sample_ok"], "the in-memory buffer must survive a failed dump"
    assert not [p.name for p in root.iterdir() if p.name.startswith(".")], "temporary files left behind"
    storage = data.ListStorage(big) if mode.endswith("list") else data.LazyTensorStorage(big)
    rb = data.TensorDictReplayBuffer(storage=storage, batch_size=4)
    rb.loads(root)  # the previous checkpoint, intact
    assert len(rb) == small and bool((rb[torch.arange(small)]["obs"] == 1.0).all())


@pytest.mark.integration
@pytest.mark.parametrize("mode", BUFFER_MODES)
def test_buffer_dump_on_a_full_disk(writer_results, mode):
    out, root = _case(writer_results, mode)
    _assert_clean_failure(root, out, mode)
    assert out["disk_full"]
    if mode.startswith("fsize"):
        assert "File too large" in out["message"]
    else:
        assert out["errno"] == 28  # ENOSPC
    if mode.startswith("check"):
        assert "needs" in out["message"] and "Nothing was written" in out["message"]


def test_free_space_is_checked_before_writing(tmp_path, monkeypatch):
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(100), batch_size=2)
    rb.extend(TensorDict(obs=torch.ones(50, 8), batch_size=[50]))
    rb.dumps(tmp_path / "ckpt")
    before = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    monkeypatch.setattr(safe_files, "free_bytes", lambda directory: 1000)
    with pytest.raises(CheckpointWriteError, match=r"needs 1,600 bytes, 1,000 are free.*previous checkpoint .* intact"):
        rb.dumps(tmp_path / "ckpt")
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == before


def test_only_the_filled_part_is_written_and_capacity_and_cursor_are_restored(tmp_path):
    """Issue 13: 1,000 items in a 100k buffer wrote the whole capacity (25.6 MB)."""
    rb = data.TensorDictReplayBuffer(storage=data.LazyMemmapStorage(100_000), batch_size=8)
    rb.extend(TensorDict(obs=torch.arange(1000.0).unsqueeze(-1).expand(1000, 64).contiguous(), batch_size=[1000]))
    rb.dumps(tmp_path / "ckpt")
    written = sum(p.stat().st_size for p in (tmp_path / "ckpt").rglob("*") if p.is_file())
    assert written < 1000 * 64 * 4 * 1.1, f"{written:,} bytes written for 256,000 bytes of data"
    other = data.TensorDictReplayBuffer(storage=data.LazyMemmapStorage(100_000), batch_size=8)
    other.loads(tmp_path / "ckpt")
    assert len(other) == 1000 and other._writer._cursor == 1000 and other._storage.max_size == 100_000
    assert other._storage._storage.batch_size[0] == 100_000
    index = other.extend(TensorDict(obs=torch.full((3, 64), -1.0), batch_size=[3]))
    assert index.tolist() == [1000, 1001, 1002] and len(other) == 1003
    assert torch.equal(other[torch.arange(1000)]["obs"], rb[torch.arange(1000)]["obs"])
    fresh = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(100_000), batch_size=8)
    fresh.loads(tmp_path / "ckpt")  # into a lazy storage never written to
    assert fresh._storage._storage.batch_size[0] == 100_000 and len(fresh) == 1000


@pytest.mark.integration
def test_trainer_checkpoint_on_a_full_disk(writer_results):
    out, path = _case(writer_results, "trainer")
    assert out["error"] == "CheckpointWriteError" and out["errno"] == 28, out
    assert "checkpoint.pt" in out["message"] and "bytes" in out["message"] and "intact" in out["message"]
    assert "inline_container" not in out["message"]
    assert not path.with_name("checkpoint.pt.tmp").exists()
    assert load_checkpoint(path)["step"] == 1


@pytest.mark.integration
def test_memmap_scratch_dir_on_a_full_disk_is_an_error_not_sigbus(writer_results):
    out, where = _case(writer_results, "scratch")
    assert out["error"] == "OSError" and out["errno"] == 28, out
    assert "cannot reserve" in out["message"] and "scratch" in out["message"]


def test_trainer_checkpoint_write_error_keeps_the_previous_file(tmp_path, monkeypatch):
    path = save_checkpoint({"step": 1}, tmp_path / "checkpoint.pt")

    def failing_write(file, chunks, *, nbytes=None):
        Path(file).write_bytes(b"partial")
        raise OSError(28, "No space left on device", str(file))

    monkeypatch.setattr("tdrl.trainers.checkpoint.write_file", failing_write)
    with pytest.raises(CheckpointWriteError, match=r"No space left on device.*checkpoint\.pt is intact") as info:
        save_checkpoint({"step": 2}, path)
    assert info.value.disk_full
    monkeypatch.undo()
    assert load_checkpoint(path)["step"] == 1


def test_resume_on_a_full_disk_says_so(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    save_checkpoint({"step": 1, "w": torch.ones(1000)}, run / "checkpoint.pt")
    monkeypatch.setattr(safe_files, "free_bytes", lambda directory: 10)
    with pytest.raises(CheckpointWriteError, match="cannot resume.*disk"):
        ensure_room_to_resume(run / "checkpoint.pt")
    assert cli_main(["resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "cannot resume" in err and "not enough disk space" in err


def test_trainer_checkpoints_hold_only_the_filled_part_of_a_buffer(tmp_path):
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(100_000), batch_size=8)
    rb.extend(TensorDict(obs=torch.ones(1000, 64), batch_size=[1000]))
    path = save_checkpoint({"replay_buffer": rb.state_dict()}, tmp_path / "checkpoint.pt")
    assert path.stat().st_size < 1000 * 64 * 4 * 1.1
    other = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(100_000), batch_size=8)
    other.load_state_dict(load_checkpoint(path)["replay_buffer"])
    assert len(other) == 1000 and other._storage._storage.batch_size[0] == 100_000
    assert other.extend(TensorDict(obs=torch.zeros(2, 64), batch_size=[2])).tolist() == [1000, 1001]
