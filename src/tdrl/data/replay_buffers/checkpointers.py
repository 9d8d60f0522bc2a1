"""Atomic, pickle-free checkpoints for replay buffers.

A checkpoint directory ``path`` holds complete snapshots ``path/ckpt-<id>/`` and a small JSON pointer
``path/LATEST`` naming the current one. A new snapshot is written into a temporary directory, renamed
into place, and only then is ``LATEST`` replaced with :func:`os.replace` (atomic on POSIX). A crash at
any point therefore leaves ``LATEST`` pointing at the previous, complete snapshot.

Loading never unpickles arbitrary objects: tensors go through ``torch.load(weights_only=True)``,
metadata through JSON, large tensor data through tensordict memory maps.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "load_json",
    "load_tensors",
    "resolve_checkpoint",
    "save_json",
    "save_tensors",
    "write_checkpoint",
]

_POINTER = "LATEST"


def write_checkpoint(path: str | os.PathLike, write_fn: Callable[[Path], None]) -> Path:
    """Runs ``write_fn(tmp_dir)`` and atomically publishes ``tmp_dir`` as the checkpoint at ``path``.

    Args:
        path: the checkpoint directory (created if missing).
        write_fn: writes the snapshot's files into the directory it is given.

    Returns:
        The directory of the published snapshot.

    Examples:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> snap = write_checkpoint(root, lambda d: save_json(d / "meta.json", {"step": 1}))
        >>> load_json(resolve_checkpoint(root) / "meta.json")
        {'step': 1}
    """
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex[:12]
    tmp = root / f".tmp-{token}"
    tmp.mkdir()
    try:
        write_fn(tmp)
        final = root / f"ckpt-{token}"
        os.replace(tmp, final)
        pointer_tmp = root / f".{_POINTER}-{token}"
        with open(pointer_tmp, "w") as f:
            json.dump({"current": final.name}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(pointer_tmp, root / _POINTER)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for old in root.iterdir():
        if old.name != final.name and (old.name.startswith("ckpt-") or old.name.startswith(".tmp-")):
            shutil.rmtree(old, ignore_errors=True)
    return final


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """The snapshot directory the checkpoint at ``path`` currently points to.

    Args:
        path: a directory written by :func:`write_checkpoint`.

    Returns:
        The complete snapshot directory.

    Raises:
        FileNotFoundError: if ``path`` holds no published checkpoint.
    """
    root = Path(path)
    pointer = root / _POINTER
    if not pointer.exists():
        raise FileNotFoundError(f"No replay-buffer checkpoint at {root}: missing {_POINTER} pointer file.")
    with open(pointer) as f:
        current = json.load(f)["current"]
    return root / current


def save_json(file: Path, obj: Any) -> None:
    """Writes ``obj`` (plain Python values) to ``file`` as JSON."""
    with open(file, "w") as f:
        json.dump(obj, f)


def load_json(file: Path) -> Any:
    """Reads JSON written by :func:`save_json`."""
    with open(file) as f:
        return json.load(f)


def save_tensors(file: Path, obj: Any) -> None:
    """Saves nested dicts / lists of tensors and plain values with :func:`torch.save`."""
    torch.save(obj, file)


def load_tensors(file: Path) -> Any:
    """Loads :func:`save_tensors` output with ``weights_only=True`` (no arbitrary unpickling)."""
    return torch.load(file, weights_only=True)
