"""Tests of ``tdrl.data.map.hash`` (golden values against TorchRL 0.14.1 under ``PYTHONHASHSEED=0``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tdrl.data import BinaryToDecimal, RandomProjectionHash, SipHash

HERE = Path(__file__).parent
GOLDEN = json.loads((HERE / "map_torchrl_0_14_1.json").read_text())["hashes"]
SRC = HERE.parents[2] / "src"


def test_hashes_match_torchrl_golden():
    # Python salts hash(bytes) per process: the golden values hold under PYTHONHASHSEED=0 only.
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(HERE / "_hash_cases.py"), "tdrl"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(proc.stdout)
    assert ours.keys() == GOLDEN.keys()
    bad = [k for k in GOLDEN if ours[k] != GOLDEN[k]]
    assert not bad, f"differ from TorchRL 0.14.1: {bad}"


def test_siphash_is_builtin_hash_of_row_bytes():
    x = torch.tensor([[1.5, 2.0], [3.0, 4.0], [1.5, 2.0]])
    h = SipHash()(x)
    assert h.dtype == torch.int64 and h.shape == (3,)
    assert h.tolist() == [hash(r.numpy().tobytes()) for r in x]
    assert h[0] == h[2] and h[0] != h[1]
    assert SipHash(as_tensor=False)(x)[1] == x[1].numpy().tobytes()
    # bfloat16 goes through float16
    xb = x.to(torch.bfloat16)
    assert SipHash()(xb).tolist() == SipHash()(xb.to(torch.float16)).tolist()
    with pytest.raises(ValueError, match="0-dim"):
        SipHash()(torch.tensor(1.0))


def test_binary_to_decimal():
    b2d = BinaryToDecimal(num_bits=4, device="cpu", dtype=torch.int32, convert_to_binary=True)
    assert b2d(torch.tensor([[0.0, 0, 1, 1, 1, 0, 0, 0]])).tolist() == [3 + 8]
    assert BinaryToDecimal(num_bits=3, device=None, dtype=torch.int64)(torch.tensor([1, 0, 1])).tolist() == [5]
    with pytest.raises(ValueError, match="smaller than num_bits=4"):
        b2d(torch.ones(2, 3))
    with pytest.raises(ValueError, match="not a multiple"):
        b2d(torch.ones(2, 6))
    with pytest.raises(ValueError, match="num_bits"):
        BinaryToDecimal(num_bits=0, device="cpu", dtype=torch.int64)


def test_random_projection_seeded_and_reloadable():
    torch.manual_seed(1)
    h = RandomProjectionHash(n_components=5)
    x = torch.randn(4, 20)
    out = h(x)
    assert h.n_components == 5 and h.transform.shape == (20, 5) and h.transform.dtype == torch.bfloat16
    assert out.tolist() == SipHash()(x.to(torch.bfloat16) @ h.transform).tolist()
    fresh = RandomProjectionHash(n_components=5)
    fresh.load_state_dict(h.state_dict())
    assert fresh(x).tolist() == out.tolist()
    with pytest.raises(ValueError, match="expects 20 features"):
        h(torch.randn(4, 7))
    with pytest.raises(ValueError, match="n_components"):
        RandomProjectionHash(n_components=0)


def test_random_projection_custom_init():
    h = RandomProjectionHash(n_components=2, dtype_cast=torch.float32, init_method=torch.nn.init.ones_)
    x = torch.tensor([[1.0, 2.0], [2.0, 1.0], [0.0, 1.0]])
    out = h(x)
    assert torch.equal(h.transform, torch.ones(2, 2))
    assert out[0] == out[1] and out[0] != out[2]  # equal projections hash equally
