"""Golden numbers recorded once from TorchRL 0.14.1 (see ``golden_torchrl_0_14_1.json``) and input builders.

Inputs are deterministic functions of ``arange`` so that they do not depend on the RNG of either library.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

GOLDEN = json.loads((Path(__file__).parent / "golden_torchrl_0_14_1.json").read_text())


def det(*shape: int, scale: float = 1.0, phase: float = 0.0) -> torch.Tensor:
    """Deterministic tensor ``scale * sin(1.7 * i + phase)`` of the given shape."""
    n = 1
    for s in shape:
        n *= s
    return (torch.sin(torch.arange(n, dtype=torch.float32) * 1.7 + phase) * scale).reshape(shape)


def golden(name: str) -> torch.Tensor:
    """A recorded TorchRL value as a tensor."""
    return torch.tensor(GOLDEN[name])
