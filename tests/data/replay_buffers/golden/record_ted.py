"""Records TorchRL 0.14.1's TED2Flat compact layout of full (ring-buffer) storages as golden data.

Run in the anchor venv only: ``~/.cache/torchrl-anchor-venv/bin/python tests/data/replay_buffers/golden/record_ted.py``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch
from tensordict import TensorDict

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "torchrl"
if BACKEND == "torchrl":
    from torchrl.data import TED2Flat
else:
    from tdrl.data import TED2Flat

# (rows, done rows, shift): shift is one past the last written row of a full ring buffer.
CASES = [(6, [1, 4], 6), (7, [2, 5], 3), (5, [], 2)]


def make(rows: int, done_rows: list[int]) -> TensorDict:
    done = torch.zeros(rows, 1, dtype=torch.bool)
    done[done_rows] = True
    obs = torch.arange(rows * 2, dtype=torch.float32).view(rows, 2)
    return TensorDict(
        {
            "observation": obs,
            "action": torch.arange(rows) * 10,
            ("next", "observation"): obs + 100,
            ("next", "done"): done,
            ("next", "terminated"): done.clone(),
            ("next", "reward"): torch.arange(rows, dtype=torch.float32).unsqueeze(-1),
        },
        [rows],
    )


def cases() -> dict:
    out = {}
    for i, (rows, done_rows, shift) in enumerate(CASES):
        hook = TED2Flat()
        hook.shift, hook.is_full = shift, True
        with tempfile.TemporaryDirectory() as tmp:
            flat = hook(make(rows, done_rows), path=Path(tmp))
            out[f"case{i}"] = {
                "/".join(k if isinstance(k, tuple) else (k,)): flat.get(k).tolist()
                for k in sorted(flat.keys(True, True), key=str)
                if isinstance(flat.get(k), torch.Tensor)
            }
    return out


if __name__ == "__main__":
    result = cases()
    if BACKEND == "torchrl":
        Path(__file__).with_name("ted_torchrl_0_14_1.json").write_text(json.dumps(result))
    else:
        print(json.dumps(result)[:300])
