"""Atomic save / safe load of a sampler's ``state_dict`` under a checkpoint directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tdrl.data.replay_buffers.checkpointers import load_tensors, save_tensors

__all__ = ["load_state", "save_state"]


def save_state(path: str | os.PathLike, filename: str, state: dict[str, Any]) -> None:
    """Writes ``state`` to ``path / filename`` via a temporary file and an atomic rename.

    Examples:
        >>> import tempfile, torch
        >>> with tempfile.TemporaryDirectory() as d:
        ...     save_state(d, "s.pt", {"a": torch.arange(2), "b": None})
        ...     load_state(d, "s.pt")
        {'a': tensor([0, 1]), 'b': None}
    """
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / filename
    tmp = target.with_name(target.name + ".tmp")
    save_tensors(tmp, state)
    os.replace(tmp, target)


def load_state(path: str | os.PathLike, filename: str) -> dict[str, Any]:
    """Reads a state written by :func:`save_state` with ``weights_only=True`` (no arbitrary pickle).

    Raises:
        CheckpointError: the file holds pickled objects or is not a readable torch file.
    """
    target = Path(path) / filename
    if not target.exists():
        raise FileNotFoundError(f"no sampler checkpoint at {target}.")
    return load_tensors(target)
