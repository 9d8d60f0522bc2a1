"""Temporary storage: a ``LazyMemmapStorage`` without ``scratch_dir`` leaves nothing behind, even after SIGKILL.

Issue 13: 20 killed processes left 1 GB of temporary memmap folders. The storage now maps files that are
unlinked as soon as they are created (in ``/dev/shm``, or the temporary directory when that is too small).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data

_FILL_AND_WAIT = """
import sys, time, torch
from tensordict import TensorDict
import tdrl.data as data
storage = data.LazyMemmapStorage(20_000)
storage.set(torch.arange(20_000), TensorDict(obs=torch.ones(20_000, 64), batch_size=[20_000]))  # 5 MB
assert float(storage.get(torch.tensor([19_999]))["obs"].sum()) == 64.0
print("ready", flush=True)
time.sleep(600)
"""


def _shm() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


@pytest.mark.integration
@pytest.mark.parametrize("no_shm", [False, True], ids=["dev-shm", "tmpdir"])
def test_sigkilled_process_leaves_no_files(tmp_path, no_shm):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = _FILL_AND_WAIT
    if no_shm:  # as on hosts whose /dev/shm is too small: the maps go to the temporary directory
        script = ("import importlib\n"
                  "importlib.import_module('tensordict.memmap')._FileHandler._dir_candidates = []\n" + script)
    shm_before = _shm()
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp)})
    try:
        assert proc.stdout.readline().strip() == "ready", "the child did not fill its storage"
        assert _files(tmp) == [], "the maps must be unlinked while in use"
        assert not [n for n in _shm() - shm_before if str(proc.pid) in n]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert _files(tmp) == []
    assert not [n for n in _shm() - shm_before if str(proc.pid) in n]


def test_anonymous_storage_survives_pickling_and_dumps(tmp_path):
    storage = data.LazyMemmapStorage(10)
    storage.set(torch.arange(3), TensorDict(obs=torch.arange(6.0).view(3, 2), batch_size=[3]))
    clone = pickle.loads(pickle.dumps(storage))
    assert torch.equal(clone.get(torch.arange(3))["obs"], torch.arange(6.0).view(3, 2))
    storage.dumps(tmp_path / "c")
    other = data.LazyMemmapStorage(10)
    other.loads(tmp_path / "c")
    assert len(other) == 3 and type(other._storage["obs"]).__name__ == "MemoryMappedTensor"
    assert storage.cleanup() and storage._storage is None
