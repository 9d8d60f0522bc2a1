"""Fault injection for tdrl's data safety: counts of faults injected, survived, and data lost.

Run ``python benchmarks/reliability_data.py`` (``--quick`` for the small counts the tests use); it prints the
Markdown table of ``docs/reliability.md``. ``--only kills --json`` prints one experiment's counts as JSON
(``tests/reliability/test_killed_writes.py`` runs it so).

Experiments (each in this process; children are ``os.fork``-ed so that killing them costs no interpreter start):

- ``kills``: a child writes a replay-buffer checkpoint (or a trainer checkpoint) and is ``SIGKILL``-ed at a
  random moment; the checkpoint must then load and hold exactly the previous or the new content.
- ``corruption``: one file of a checkpoint is emptied, truncated, padded or has one byte flipped; loading must
  fail with an error naming that file (or, for a trainer checkpoint with a ``.prev``, load the previous one).
- ``pickles``: a marker-writing pickle is planted in each load path; it must be refused and never run.
- ``disk_full``: dumps and trainer checkpoints on a 2 MiB tmpfs (when mountable) and under ``RLIMIT_FSIZE``
  must raise ``CheckpointWriteError``, leave no temporary file and keep the previous checkpoint loadable.
- ``costs``: size and time of a dump and a load (with its checksum verification) of a half-full buffer.
- ``temp_leaks``: a child fills a ``LazyMemmapStorage`` without ``scratch_dir`` and is ``SIGKILL``-ed; no file
  may be left in its temporary directory or ``/dev/shm``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict

import tdrl.data as data
from tdrl._utils.safe_files import CheckpointError, CheckpointWriteError
from tdrl.data.replay_buffers.checkpointers import _write_manifest, resolve_checkpoint
from tdrl.trainers.algorithms.configs.safe_targets import safe_instantiate
from tdrl.trainers.checkpoint import load_checkpoint, save_checkpoint
from tdrl.trainers.datasets import load_dataset

ROWS, WIDTH = 20_000, 64  # 5 MB per buffer checkpoint: long enough to be killed in the middle


def _buffer(value: float, rows: int = ROWS) -> data.TensorDictReplayBuffer:
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(rows), batch_size=4)
    rb.extend(TensorDict(obs=torch.full((rows, WIDTH), value), step=torch.full((rows,), int(value)), batch_size=[rows]))
    return rb


def _buffer_value(root: Path) -> float:
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(ROWS), batch_size=4)
    rb.loads(root)
    obs = rb[torch.arange(len(rb))]["obs"]
    value = float(obs[0, 0])
    if len(rb) != ROWS or not bool((obs == value).all()):
        raise AssertionError(f"torn checkpoint: {len(rb)} rows, values {obs.unique().tolist()[:5]}")
    return value


def _trainer_write(path: Path, value: float) -> None:
    save_checkpoint({"value": value, "w": torch.full((ROWS * WIDTH // 4,), value)}, path)


def _trainer_value(path: Path) -> float:
    state = load_checkpoint(path)
    if not bool((state["w"] == state["value"]).all()):
        raise AssertionError("torn trainer checkpoint")
    return float(state["value"])


def _kill_loop(n: int, seed: int, write: Callable[[float], None], read: Callable[[], float]) -> dict[str, int]:
    """Forks ``n`` writers of versions 1..n, kills each at a random moment, checks what loads afterwards."""
    rng = random.Random(seed)
    write(0.0)
    t0 = time.perf_counter()
    write(0.5)
    duration = time.perf_counter() - t0
    good = read()
    counts = {"injected": n, "killed_mid_write": 0, "loaded_previous": 0, "loaded_new": 0, "torn": 0}
    for version in range(1, n + 1):
        pid = os.fork()
        if pid == 0:  # the writer
            try:
                write(float(version))
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.0, 3.0 * duration))  # a third of the kills land after the write
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        counts["killed_mid_write"] += int(os.WIFSIGNALED(status))
        try:
            value = read()
        except (AssertionError, CheckpointError, FileNotFoundError):
            counts["torn"] += 1
            continue
        if value == version:
            counts["loaded_new"] += 1
            good = value
        elif value == good:
            counts["loaded_previous"] += 1
        else:
            counts["torn"] += 1
    return counts


def kills(n: int, seed: int, workdir: Path) -> dict[str, dict[str, int]]:
    root, path = workdir / "kill_buffer", workdir / "kill_trainer" / "checkpoint.pt"
    return {
        "buffer dumps": _kill_loop(n, seed, lambda v: _buffer(v).dumps(root), lambda: _buffer_value(root)),
        "trainer checkpoints": _kill_loop(n, seed + 1, lambda v: _trainer_write(path, v), lambda: _trainer_value(path)),
    }


def _damage(file: Path, kind: str, rng: random.Random) -> None:
    raw = bytearray(file.read_bytes())
    if kind == "empty":
        raw = bytearray()
    elif kind == "truncated":
        raw = raw[: rng.randrange(0, max(1, len(raw)))]
    elif kind == "padded":
        raw += b"\0" * rng.randrange(1, 64)
    elif raw:
        raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
    file.write_bytes(bytes(raw))


def corruption(n: int, seed: int, workdir: Path) -> dict[str, dict[str, int]]:
    rng = random.Random(seed)
    kinds = ["empty", "truncated", "padded", "flipped"]
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(64), sampler=data.PrioritizedSampler(64, 0.7, 0.5),
                                     batch_size=4)
    rb.extend(TensorDict(obs=torch.arange(64.0 * 8).view(64, 8), batch_size=[64]))
    clean = workdir / "corrupt_clean"
    rb.dumps(clean)
    files = [p.relative_to(clean) for p in resolve_checkpoint(clean).parent.rglob("*") if p.is_file()]
    buffer_counts = {"injected": 0, "error": 0, "error_naming_file": 0, "loaded_intact": 0, "loaded_wrong": 0}
    for _ in range(n):
        trial = workdir / "corrupt_trial"
        shutil.rmtree(trial, ignore_errors=True)
        shutil.copytree(clean, trial)
        victim = trial / rng.choice(files)
        _damage(victim, rng.choice(kinds), rng)
        buffer_counts["injected"] += 1
        other = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(64),
                                            sampler=data.PrioritizedSampler(64, 0.7, 0.5), batch_size=4)
        try:
            other.loads(trial)
        except (CheckpointError, FileNotFoundError) as err:
            buffer_counts["error"] += 1
            buffer_counts["error_naming_file"] += int(victim.name in str(err))
            continue
        intact = torch.equal(other[torch.arange(64)]["obs"], torch.arange(64.0 * 8).view(64, 8))
        buffer_counts["loaded_intact" if intact else "loaded_wrong"] += 1
    trainer_counts = {"injected": 0, "error_naming_file": 0, "loaded_previous": 0, "loaded_intact": 0,
                      "loaded_wrong": 0}
    path = workdir / "corrupt_trainer" / "checkpoint.pt"
    for i in range(n):
        shutil.rmtree(path.parent, ignore_errors=True)
        save_checkpoint({"step": 1, "w": torch.arange(1000.0)}, path)
        if i % 2 == 0:  # half the trials have a previous checkpoint to fall back to
            save_checkpoint({"step": 2, "w": torch.arange(1000.0) * 2}, path)
        _damage(path, rng.choice(kinds), rng)
        trainer_counts["injected"] += 1
        try:
            state = load_checkpoint(path)
        except CheckpointError as err:
            trainer_counts["error_naming_file"] += int(path.name in str(err))
            continue
        newest = 2 if i % 2 == 0 else 1
        intact = torch.equal(state["w"], torch.arange(1000.0) * state["step"])
        key = "loaded_wrong" if not intact else "loaded_intact" if state["step"] == newest else "loaded_previous"
        trainer_counts[key] += 1
    return {"buffer files": buffer_counts, "trainer checkpoint": trainer_counts}


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple:
        return (open, (self.marker, "w"))


def _plant_format1(root: Path, marker: Path) -> None:
    snap = root / "ckpt-0123456789ab"
    td = TensorDict({"obs": torch.zeros(2, 2)}, batch_size=[2])
    td.set_non_tensor("evil", _Payload(marker))
    td.memmap(prefix=str(snap / "storage" / "data"))
    (snap / "storage" / "storage.json").write_text(json.dumps({"initialized": True, "_len": 2, "ndim": 1}))
    for sub in ("sampler", "writer"):
        (snap / sub).mkdir()
    (snap / "writer" / "writer.json").write_text('{"_cursor": 2}')
    torch.save({}, snap / "transforms.pt")
    (snap / "buffer_metadata.json").write_text('{"batch_size": 2}')
    (root / "LATEST").write_text(json.dumps({"current": snap.name}))


def _plant_in_file(root: Path, relative: str, marker: Path, storage: Any) -> None:
    rb = data.TensorDictReplayBuffer(storage=storage, sampler=data.SamplerWithoutReplacement(), batch_size=2)
    rb.extend(TensorDict(obs=torch.zeros(4, 2), batch_size=[4]))
    rb.dumps(root)
    snap = resolve_checkpoint(root)
    target = snap / relative if relative.endswith(".pt") else next((snap / relative).iterdir())
    torch.save({"_storage": [_Payload(marker)], "evil": _Payload(marker)}, target)
    (snap / "MANIFEST.json").unlink()  # an attacker rewrites the manifest too
    _write_manifest(snap)


def pickles(workdir: Path) -> dict[str, dict[str, int]]:
    def fresh() -> data.TensorDictReplayBuffer:
        return data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(8), sampler=data.SamplerWithoutReplacement(),
                                           batch_size=2)

    cases: dict[str, Callable[[Path, Path], None]] = {
        "buffer folder, pickled non-tensor leaf (issue 13)": lambda r, m: (_plant_format1(r, m), fresh().loads(r)),
        "ListStorage storage.pt": lambda r, m: (_plant_in_file(r, "storage/storage.pt", m, data.ListStorage(8)),
                                               data.TensorDictReplayBuffer(storage=data.ListStorage(8)).loads(r)),
        "buffer transforms.pt": lambda r, m: (_plant_in_file(r, "transforms.pt", m, data.LazyTensorStorage(8)),
                                             fresh().loads(r)),
        "sampler state": lambda r, m: (_plant_in_file(r, "sampler", m, data.LazyTensorStorage(8)), fresh().loads(r)),
        "trainer checkpoint": lambda r, m: (r.mkdir(), torch.save({"format": "tdrl-checkpoint-1", "state": _Payload(m)},
                                                                  r / "c.pt"), load_checkpoint(r / "c.pt")),
        "offline dataset.path": lambda r, m: (_plant_format1(r, m), load_dataset(r, batch_size=2)),
        "config _target_": lambda r, m: safe_instantiate({"_target_": "builtins.open", "_args_": [str(m), "w"]}),
        "config _target_ via a module attribute": lambda r, m: safe_instantiate(
            {"_target_": "tdrl.trainers.run.os.system", "_args_": [f"touch {m}"]}),
    }
    out = {}
    for i, (name, case) in enumerate(cases.items()):
        root, marker = workdir / f"pickle{i}", workdir / f"pickle{i}.PWNED"
        try:
            case(root, marker)
            refused = 0
        except (CheckpointError, ValueError, TypeError):
            refused = 1
        out[name] = {"injected": 1, "refused": refused, "executed": int(marker.exists())}
    return out


def _mount_tmpfs(where: Path) -> bool:
    where.mkdir(parents=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)],
                          capture_output=True).returncode == 0


def _full_disk_case(where: Path, write: Callable[[], None], check: Callable[[], bool]) -> dict[str, int]:
    try:
        write()
        clean = 0
    except CheckpointWriteError as err:
        clean = int("bytes" in str(err) and "intact" in str(err))
    leftovers = [p for p in where.rglob("*") if p.name.startswith(".tmp") or p.name.endswith(".tmp")]
    return {"injected": 1, "clean_error": clean, "previous_loads": int(check()), "temp_left": len(leftovers)}


def disk_full(workdir: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for medium in ("tmpfs", "RLIMIT_FSIZE"):
        for kind in ("buffer dump", "trainer checkpoint"):
            where = workdir / f"full-{medium}-{kind.split()[0]}"
            if medium == "tmpfs" and not _mount_tmpfs(where):
                continue
            where.mkdir(exist_ok=True)
            big = 40_000 if kind == "buffer dump" else 1_000_000  # 10 MB / 4 MB
            if kind == "buffer dump":
                _buffer(1.0, 1000).dumps(where / "ckpt")
                rb = _buffer(2.0, big)
                def write(rb=rb, where=where) -> None:  # noqa: E306
                    rb.dumps(where / "ckpt")
                def check(where=where) -> bool:  # noqa: E306
                    other = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(1000), batch_size=2)
                    other.loads(where / "ckpt")
                    return len(other) == 1000
            else:
                save_checkpoint({"step": 1}, where / "checkpoint.pt")
                def write(where=where, big=big) -> None:  # noqa: E306
                    save_checkpoint({"step": 2, "w": torch.ones(big)}, where / "checkpoint.pt")
                def check(where=where) -> bool:  # noqa: E306
                    return load_checkpoint(where / "checkpoint.pt")["step"] == 1
            if medium == "RLIMIT_FSIZE":
                resource.setrlimit(resource.RLIMIT_FSIZE, (512 * 1024, resource.RLIM_INFINITY))
                # The free-space check cannot see a per-file limit: this exercises the EFBIG write path.
            try:
                out[f"{kind} on {medium}"] = _full_disk_case(where, write, check)
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                if medium == "tmpfs":
                    subprocess.run(["umount", "-l", str(where)], check=False)
    return out


def temp_leaks(n: int, workdir: Path) -> dict[str, dict[str, int]]:
    tmp = workdir / "tmpdir"
    tmp.mkdir()
    counts = {"injected": n, "files_left": 0}
    for _ in range(n):
        shm_before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                tempfile.tempdir = str(tmp)
                os.environ["TMPDIR"] = str(tmp)
                storage = data.LazyMemmapStorage(50_000)
                storage.set(torch.arange(50_000), TensorDict(obs=torch.ones(50_000, 64), batch_size=[50_000]))
                os.write(ready_w, b"1")
                time.sleep(600)
            finally:
                os._exit(0)
        os.read(ready_r, 1)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(ready_r)
        os.close(ready_w)
        left = [p for p in tmp.rglob("*") if p.is_file()]
        shm_left = set(os.listdir("/dev/shm")) - shm_before if os.path.isdir("/dev/shm") else set()
        counts["files_left"] += len(left) + len([s for s in shm_left if str(pid) in s])
    return {"LazyMemmapStorage without scratch_dir, SIGKILL": counts}


def costs(workdir: Path) -> dict[str, dict[str, float]]:
    """Checkpoint sizes and times of a 100k-capacity buffer holding 50k items of 64 floats (12.8 MB of data)."""
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(100_000), batch_size=256)
    rb.extend(TensorDict(obs=torch.randn(50_000, 64), batch_size=[50_000]))
    root = workdir / "cost"
    t0 = time.perf_counter()
    rb.dumps(root)
    dump_s = time.perf_counter() - t0
    snap = resolve_checkpoint(root, verify=False)
    t0 = time.perf_counter()
    resolve_checkpoint(root)  # the manifest check alone: every file read once and CRC-32'ed
    verify_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(100_000), batch_size=256).loads(root)
    load_s = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in snap.rglob("*") if p.is_file())
    return {"100k-capacity buffer, 50k items x 64 float32": {
        "checkpoint_MB": round(size / 1e6, 2), "dump_s": round(dump_s, 3), "load_s": round(load_s, 3),
        "of_which_verify_s": round(verify_s, 3)}}


def _table(results: dict[str, dict[str, dict[str, int]]]) -> str:
    lines = ["| experiment | case | counts |", "|---|---|---|"]
    for experiment, cases in results.items():
        for case, counts in cases.items():
            lines.append(f"| {experiment} | {case} | " + ", ".join(f"{k} {v}" for k, v in counts.items()) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts (seconds)")
    parser.add_argument("--only", choices=["kills", "corruption", "pickles", "disk_full", "temp_leaks", "costs"])
    parser.add_argument("--json", action="store_true", help="print JSON instead of the Markdown table")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    logging.getLogger("tdrl").setLevel(logging.ERROR)  # the fallbacks to .prev log a warning each
    n = 6 if args.quick else 50
    with tempfile.TemporaryDirectory(prefix="tdrl-reliability-") as tmp:
        workdir = Path(tmp)
        experiments: dict[str, Callable[[], dict]] = {
            "kills": lambda: kills(n, args.seed, workdir),
            "corruption": lambda: corruption(4 * n, args.seed, workdir),
            "pickles": lambda: pickles(workdir),
            "disk_full": lambda: disk_full(workdir),
            "temp_leaks": lambda: temp_leaks(max(2, n // 5), workdir),
            "costs": lambda: costs(workdir),
        }
        results = {name: fn() for name, fn in experiments.items() if args.only in (None, name)}
    print(json.dumps(results) if args.json else _table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
