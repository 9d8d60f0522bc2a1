"""Records TorchRL 0.14.1's Sequence sample-unit expansions as golden data (run in the anchor venv only).

~/.cache/torchrl-anchor-venv/bin/python tests/data/replay_buffers/golden/record_sample_units.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from tensordict import TensorDict

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "torchrl"
if BACKEND == "torchrl":
    from torchrl.data import LazyTensorStorage
    from torchrl.data.replay_buffers import Sequence
else:
    from tdrl.data import LazyTensorStorage
    from tdrl.data.replay_buffers import Sequence

CONFIGS = [
    {"length": 3},
    {"length": 3, "episode_boundary": "stop"},
    {"length": 3, "episode_boundary": "include_reset"},
    {"length": 2, "burn_in": 2, "bootstrap": 1},
    {"length": 2, "burn_in": 1, "bootstrap": 2, "episode_boundary": "stop", "dilation": 2},
    {"length": 4, "done_key": None},
    {"length": 2, "dilation": 3, "episode_boundary": "include_reset", "burn_in": 1},
]
# (capacity, number of rows written, done rows): the last case wraps around the ring buffer.
STORAGES = [(12, 12, [3, 7, 11]), (12, 9, [2, 5]), (8, 13, [1, 4, 6, 10])]


def cases() -> dict:
    out = {}
    for s, (capacity, n, done_rows) in enumerate(STORAGES):
        storage = LazyTensorStorage(capacity)
        done = torch.zeros(n, 1, dtype=torch.bool)
        done[done_rows] = True
        data = TensorDict({"obs": torch.arange(n), ("next", "done"): done}, batch_size=[n])
        for start in range(0, n, capacity):  # ring-buffer writes, one lap at a time
            rows = torch.arange(start, min(n, start + capacity))
            storage.set(rows % capacity, data[rows])
        anchors = torch.arange(min(n, capacity))
        for c, config in enumerate(CONFIGS):
            index, info = Sequence(**config).expand(anchors, {"w": torch.arange(len(anchors)) * 1.0}, storage)
            out[f"s{s}-c{c}"] = {
                "index": index.tolist(),
                **{k: torch.as_tensor(v).tolist() for k, v in sorted(info.items())},
            }
    # a [time, lanes] storage
    storage = LazyTensorStorage(12, ndim=2)
    done = torch.zeros(6, 2, 1, dtype=torch.bool)
    done[2, 0] = done[4, 1] = True
    storage.set(
        torch.arange(6), TensorDict({"obs": torch.arange(12).view(6, 2), ("next", "done"): done}, [6, 2])
    )
    anchors = (torch.tensor([0, 1, 3, 5, 2]), torch.tensor([0, 1, 0, 1, 1]))
    for c, config in enumerate(CONFIGS[:4]):
        index, info = Sequence(**config).expand(anchors, {}, storage)
        out[f"md-c{c}"] = {
            "index": [t.tolist() for t in index],
            **{k: v.tolist() for k, v in sorted(info.items())},
        }
    return out


if __name__ == "__main__":
    result = cases()
    if BACKEND == "torchrl":
        Path(__file__).with_name("sample_units_torchrl_0_14_1.json").write_text(json.dumps(result))
    else:
        print(json.dumps(result)[:200])
