"""Atomic checkpoints that load with ``torch.load(..., weights_only=True)``.

A checkpoint is a nested structure of plain data only (tensors, dicts, lists, numbers, strings, ``None``):
RNG states and numpy arrays are converted to tensors or lists by :func:`to_plain` before saving, so that
loading never runs arbitrary pickle code.

Writes are atomic: the data goes to ``<path>.tmp``, is flushed and fsync'ed, then renamed over ``path`` with
:func:`os.replace`. The previous checkpoint is kept as ``<path>.prev`` until the new one is complete, and
:func:`load_checkpoint` falls back to it if ``path`` is missing or unreadable. A partial file is never
loaded: only complete files ever carry the final name.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["get_rng_state", "load_checkpoint", "save_checkpoint", "set_rng_state", "to_plain"]

_FORMAT = "tdrl-checkpoint-1"


def to_plain(obj: Any) -> Any:
    """Converts ``obj`` to data that ``torch.load(weights_only=True)`` accepts.

    Numpy arrays and scalars become tensors or numbers, tuples become lists, mappings become dicts with
    their keys kept; tensors, numbers, strings and ``None`` pass through. Anything else raises.

    Examples:
        >>> import numpy as np
        >>> to_plain({"a": np.arange(3), "b": (1, 2.0)})
        {'a': tensor([0, 1, 2]), 'b': [1, 2.0]}
    """
    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj)).clone()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (bool, int, float, str)) or obj is None:
        return obj
    if isinstance(obj, torch.Size):
        return list(obj)
    if isinstance(obj, Mapping):
        return {k if isinstance(k, (str, int)) else str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if hasattr(obj, "state_dict") and callable(obj.state_dict):
        return to_plain(obj.state_dict())
    raise TypeError(
        f"cannot store a {type(obj).__name__} in a checkpoint: only tensors, numbers, strings, lists and "
        "dicts are allowed (weights_only loading)"
    )


def get_rng_state() -> dict[str, Any]:
    """The torch, numpy and python RNG states as plain data.

    Examples:
        >>> state = get_rng_state()
        >>> a = torch.rand(1)
        >>> set_rng_state(state)
        >>> bool(torch.rand(1) == a)
        True
    """
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached": float(cached)},
        "python": {"version": version, "internal": list(internal), "gauss_next": gauss_next},
    }


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restores the states returned by :func:`get_rng_state`."""
    torch.set_rng_state(state["torch"])
    npy = state["numpy"]
    np.random.set_state(
        (npy["kind"], npy["keys"].numpy().astype(np.uint32), npy["pos"], npy["has_gauss"], npy["cached"])
    )
    py = state["python"]
    random.setstate((py["version"], tuple(py["internal"]), py["gauss_next"]))


def _prev(path: Path) -> Path:
    return path.with_name(path.name + ".prev")


def save_checkpoint(state: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Writes ``state`` to ``path`` atomically and keeps the former file as ``<path>.prev``.

    Args:
        state: plain data (see :func:`to_plain`, applied here).
        path: the destination file.

    Returns:
        The path written.

    Examples:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "ckpt.pt"
        >>> _ = save_checkpoint({"step": 1}, p)
        >>> _ = save_checkpoint({"step": 2}, p)
        >>> load_checkpoint(p)["step"], load_checkpoint(_prev(p))["step"]
        (2, 1)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": _FORMAT, "state": to_plain(dict(state))}
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fd:
        torch.save(payload, fd)
        fd.flush()
        os.fsync(fd.fileno())
    if path.exists():
        prev = _prev(path)
        if prev.exists():
            prev.unlink()
        os.link(path, prev)  # the old checkpoint stays on disk until the new one has replaced it
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path


def _load_one(path: Path) -> dict[str, Any]:
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise ValueError(f"{path} is not a tdrl checkpoint (no {_FORMAT!r} marker)")
    return payload["state"]


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Loads a checkpoint written by :func:`save_checkpoint` (``weights_only=True``).

    Falls back to ``<path>.prev`` when ``path`` is missing or cannot be read.

    Raises:
        FileNotFoundError: when neither file exists.
    """
    path = Path(path)
    errors = []
    for candidate in (path, _prev(path)):
        if not candidate.exists():
            continue
        try:
            return _load_one(candidate)
        except Exception as err:  # a corrupt file: try the previous one
            errors.append(f"{candidate}: {err}")
    if errors:
        raise ValueError("no readable checkpoint: " + "; ".join(errors))
    raise FileNotFoundError(f"no checkpoint at {path} (nor {_prev(path)})")
