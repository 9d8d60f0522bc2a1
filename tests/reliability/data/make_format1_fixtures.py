"""Writes the format-1 fixtures of this folder; run by hand with tdrl at 6c19787 (before checksums) on the path.

    git -C /work/main worktree add /tmp/tdrl-6c19787 6c19787
    PYTHONPATH=/tmp/tdrl-6c19787/src python tests/reliability/data/make_format1_fixtures.py

It writes ``format1_tensor_buffer/`` (a ``LazyTensorStorage`` buffer of 5 items in a capacity of 16, reward 7.0),
``format1_list_buffer/`` (a ``ListStorage`` buffer) and ``format1_checkpoint.pt`` (a trainer checkpoint).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from tensordict import TensorDict

import tdrl.data as data
from tdrl.trainers.checkpoint import save_checkpoint

HERE = Path(__file__).parent


def _items() -> TensorDict:
    return TensorDict({"obs": torch.arange(10.0).view(5, 2), ("next", "reward"): torch.full((5, 1), 7.0),
                       "step": torch.arange(5)}, batch_size=[5])


def main() -> None:
    for name, storage in (("format1_tensor_buffer", data.LazyTensorStorage(16)),
                          ("format1_list_buffer", data.ListStorage(16))):
        shutil.rmtree(HERE / name, ignore_errors=True)
        rb = data.TensorDictReplayBuffer(storage=storage, batch_size=2)
        rb.extend(_items())
        rb.dumps(HERE / name)
    save_checkpoint({"step": 3, "weights": torch.arange(4.0)}, HERE / "format1_checkpoint.pt")


if __name__ == "__main__":
    main()
