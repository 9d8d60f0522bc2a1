"""Atomic checkpoint files: weights_only loading, fallback to the previous file, RNG round trip."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from tdrl.trainers.checkpoint import get_rng_state, load_checkpoint, save_checkpoint, set_rng_state, to_plain


def test_torn_write_falls_back_to_previous(tmp_path):
    path = tmp_path / "c.pt"
    save_checkpoint({"step": 1}, path)
    save_checkpoint({"step": 2}, path)
    path.write_bytes(path.read_bytes()[:20])  # a torn file under the final name
    assert load_checkpoint(path)["step"] == 1


def test_temp_file_is_never_loaded(tmp_path):
    path = tmp_path / "c.pt"
    (tmp_path / "c.pt.tmp").write_bytes(b"partial")
    with pytest.raises(FileNotFoundError):
        load_checkpoint(path)


def test_checkpoint_loads_with_weights_only(tmp_path):
    path = save_checkpoint({"rng": get_rng_state(), "arr": np.arange(3)}, tmp_path / "c.pt")
    payload = torch.load(path, weights_only=True)
    assert torch.equal(payload["state"]["arr"], torch.arange(3))


def test_rng_states_round_trip():
    state = get_rng_state()
    a = (torch.rand(2), np.random.rand(), random.random())
    set_rng_state(to_plain(state))
    b = (torch.rand(2), np.random.rand(), random.random())
    assert torch.equal(a[0], b[0]) and a[1:] == b[1:]


def test_to_plain_rejects_objects():
    with pytest.raises(TypeError, match="cannot store a object"):
        to_plain(object())


_WRITE_AND_HANG = """
import pathlib, sys, time, torch
import tdrl.trainers.checkpoint as ckpt
path = pathlib.Path(sys.argv[1])
ckpt.save_checkpoint({"step": 1, "buffer": torch.arange(1000)}, path)
def half_then_hang(file, chunks, nbytes=None):
    data = b"".join(bytes(c) for c in chunks)
    with open(file, "wb") as f:
        f.write(data[: len(data) // 2])
        f.flush()
    path.with_name("writing").touch()
    time.sleep(600)
ckpt.write_file = half_then_hang
ckpt.save_checkpoint({"step": 2, "buffer": torch.arange(2000)}, path)
"""


def test_sigkill_in_the_middle_of_a_write_keeps_the_previous_file(tmp_path):
    path = tmp_path / "best.pt"
    proc = subprocess.Popen([sys.executable, "-c", _WRITE_AND_HANG, str(path)])
    try:
        for _ in range(600):
            if (tmp_path / "writing").exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert (tmp_path / "writing").exists(), f"the writer did not reach its second write (exit {proc.poll()})"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert (tmp_path / "best.pt.tmp").stat().st_size > 0  # the torn write is there, under its temporary name
    state = load_checkpoint(path)
    assert state["step"] == 1 and torch.equal(state["buffer"], torch.arange(1000))
