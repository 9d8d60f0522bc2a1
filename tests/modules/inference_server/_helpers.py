"""Process targets of the inference-server tests (importable by name in a spawned child)."""

from __future__ import annotations

import torch
from tensordict import TensorDict


def mp_actor(client, seed: int, n: int, out) -> None:
    """Sends ``n`` random observations through ``client``; puts ``(obs, action)`` lists on ``out``."""
    torch.manual_seed(seed)
    for _ in range(n):
        obs = torch.randn(3)
        answer = client(TensorDict({"observation": obs})).get("action")
        out.put((obs.tolist(), answer.tolist()))  # plain lists: the child may exit before they are read
