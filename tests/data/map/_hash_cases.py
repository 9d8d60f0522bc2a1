"""Hash cases for the golden test, computed the same way with TorchRL 0.14.1 and with tdrl.

``SipHash`` relies on Python's salted ``hash``: run under ``PYTHONHASHSEED=0``. As a script,
``python _hash_cases.py tdrl|torchrl`` prints the cases as JSON (the test runs it in a subprocess).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict


def _inputs() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    return {
        "float32": torch.randn(4, 3, generator=gen),
        "int64": torch.tensor([0, 1, -5, 2**40]),
        "bfloat16": torch.randn(3, 2, generator=gen).to(torch.bfloat16),
        "bool_3d": torch.rand(2, 2, 3, generator=gen) > 0.5,
        "float64_col": torch.randn(3, 1, generator=gen, dtype=torch.float64),
    }


def compute(backend: str) -> dict[str, Any]:
    """Every hash case with the ``backend`` ("tdrl" or "torchrl") implementation."""
    m = importlib.import_module(f"{backend}.data.map")
    out: dict[str, Any] = {}
    for name, x in _inputs().items():
        out[f"siphash_{name}"] = m.SipHash()(x).tolist()
    out["siphash_bytes"] = [b.hex() for b in m.SipHash(as_tensor=False)(_inputs()["float32"])]
    for n_components in (None, 4):
        torch.manual_seed(0)
        h = m.RandomProjectionHash(n_components=n_components)
        x = torch.randn(5, 20)
        out[f"rph_{n_components}"] = h(x).tolist()
        out[f"rph_{n_components}_transform"] = h.transform.float().tolist()
    for bits, dtype, convert in ((4, torch.int32, True), (2, torch.int64, False), (8, torch.float32, True)):
        b2d = m.BinaryToDecimal(num_bits=bits, device="cpu", dtype=dtype, convert_to_binary=convert)
        x = torch.tensor([[0.0, 1, 1, 0, -1, 2, 0, 1], [1, 1, 1, 1, 0, 0, 0, 0], [3, 0, 0, 0, 0, 0, 0, 1]])
        out[f"b2d_{bits}_{convert}"] = b2d(x).tolist()
    out["b2d_3d"] = m.BinaryToDecimal(num_bits=2, device="cpu", dtype=torch.int64)(torch.ones(2, 3, 4)).tolist()
    td = TensorDict(key1=torch.tensor([[1.0], [1], [1], [2]]), key2=torch.tensor([[3], [3], [2], [3]]),
                    batch_size=[4])
    q = m.QueryModule(in_keys=["key1", "key2"], index_key="index")
    res = q(td.clone())
    out["query_two_keys"] = {"index": res["index"].tolist(), "hash": res["_hash"].tolist()}
    res = m.QueryModule(in_keys="key1")(td.clone())
    out["query_one_key"] = {"index": res["_index"].tolist(), "hash": res["_hash"].tolist()}
    out["forest"] = _forest_hashes(m)
    return out


def _forest_hashes(m: Any) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).parent))
    from _forest_scenarios import build

    forest, root = build(m.MCTSForest, "docstring")
    tree = forest.get_tree(root)
    # Sibling hashes as sets: TorchRL sorts them apart from the children (docs/differences.md).
    groups = []
    for vertex in tree.vertices(key_type="path").values():
        if vertex.num_children:
            groups.append(sorted(int(vertex.subtree[i].hash) for i in range(vertex.num_children)))
    return {"sibling_hashes": sorted(groups)}


if __name__ == "__main__":
    print(json.dumps(compute(sys.argv[1])))
