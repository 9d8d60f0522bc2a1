"""Atomic, checksummed checkpoints that load with ``torch.load(..., weights_only=True)``.

A checkpoint is a nested structure of plain data only (tensors, dicts, lists, numbers, strings, ``None``):
RNG states and numpy arrays are converted to tensors or lists by :func:`to_plain` before saving, so that
loading never runs arbitrary pickle code.

The file is torch's zip format followed by a 28-byte trailer (``TDRLCRC1``, the payload size and its
CRC-32, ``TDRLEND!``); ``torch.load`` ignores the trailer, :func:`load_checkpoint` verifies it, so a
truncated, empty or corrupted file is a :class:`~tdrl._utils.safe_files.CheckpointError` naming the file
(checkpoints written before the trailer existed still load, without the checksum).

Writes are atomic: the payload is serialized in memory, the free space is checked, and the bytes go to
``<path>.tmp`` with plain writes (blocks reserved first), are fsync'ed, then renamed over ``path`` with
:func:`os.replace`. The previous checkpoint is kept as ``<path>.prev`` until the new one is complete, and
:func:`load_checkpoint` falls back to it if ``path`` is missing or unreadable. A failed write (disk full,
I/O error) removes ``<path>.tmp`` and raises :class:`~tdrl._utils.safe_files.CheckpointWriteError`, which
names the file, the bytes needed and says the previous checkpoint is intact.
"""

from __future__ import annotations

import io
import os
import pickle
import random
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tdrl._utils.logging import logger
from tdrl._utils.safe_files import (
    CheckpointError,
    CheckpointWriteError,
    ensure_free_space,
    free_bytes,
    write_file,
)

__all__ = [
    "CheckpointError",
    "CheckpointWriteError",
    "ensure_room_to_resume",
    "get_rng_state",
    "load_checkpoint",
    "save_checkpoint",
    "set_rng_state",
    "to_plain",
]

_FORMAT = "tdrl-checkpoint-1"
_MAGIC = b"TDRLCRC1"
_END = b"TDRLEND!"
_TRAILER_SIZE = len(_MAGIC) + 12 + len(_END)


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


def _trailer(payload: memoryview) -> bytes:
    return _MAGIC + struct.pack("<QI", len(payload), zlib.crc32(payload)) + _END


def _write_error(err: OSError, path: Path, needed: int) -> CheckpointWriteError:
    previous = (f"the previous checkpoint {path} is intact" if path.exists() else
                f"there was no previous checkpoint at {path}")
    return CheckpointWriteError(
        f"writing the trainer checkpoint {path} failed: {err.strerror or err} (errno {err.errno}) while writing "
        f"{err.filename or path}; it needs {needed:,} bytes, {free_bytes(path.parent):,} are free. The temporary "
        f"file was removed and {previous}",
        errno=err.errno, filename=err.filename or str(path), needed=needed,
    )


def save_checkpoint(state: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Writes ``state`` to ``path`` atomically and keeps the former file as ``<path>.prev``.

    Args:
        state: plain data (see :func:`to_plain`, applied here).
        path: the destination file.

    Returns:
        The path written.

    Raises:
        CheckpointWriteError: not enough free space, or the write failed; ``path`` is left as it was.

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
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)  # a crashed earlier write: its space is needed now
    buffer = io.BytesIO()
    torch.save({"format": _FORMAT, "state": to_plain(dict(state))}, buffer)
    payload = buffer.getbuffer()
    trailer = _trailer(payload)
    needed = len(payload) + len(trailer)
    try:
        ensure_free_space(path.parent, needed, what=f"trainer checkpoint {path.name}")
        write_file(tmp, [payload, trailer], nbytes=needed)
    except CheckpointWriteError as err:
        previous = f"the previous checkpoint {path} is intact" if path.exists() else f"no checkpoint was at {path}"
        raise CheckpointWriteError(f"{err}; {previous}", errno=err.errno, filename=str(path), needed=needed) from None
    except OSError as err:
        raise _write_error(err, path, needed) from err
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


def _verified_payload(path: Path) -> memoryview:
    """The torch payload of ``path``: the whole file, less the trailer, whose size and CRC-32 are checked."""
    raw = memoryview(path.read_bytes())
    if not raw:
        raise CheckpointError(f"{path} is empty (0 bytes): the checkpoint was never completely written")
    if len(raw) >= _TRAILER_SIZE and bytes(raw[-len(_END):]) == _END and bytes(raw[-_TRAILER_SIZE:][:len(_MAGIC)]) == _MAGIC:
        size, crc = struct.unpack("<QI", raw[-_TRAILER_SIZE + len(_MAGIC):-len(_END)])
        payload = raw[:-_TRAILER_SIZE]
        if size != len(payload):
            raise CheckpointError(f"{path} is truncated or padded: {len(payload):,} payload bytes, {size:,} were written")
        if zlib.crc32(payload) != crc:
            raise CheckpointError(f"{path} is corrupted: its CRC-32 does not match the one written with it")
        return payload
    tail = bytes(raw[-65536:])
    end = tail.rfind(_END)
    if end >= _TRAILER_SIZE - len(_END) and tail[end - _TRAILER_SIZE + len(_END):][:len(_MAGIC)] == _MAGIC:
        raise CheckpointError(f"{path} is longer than written: {len(tail) - end - len(_END):,} bytes follow its trailer")
    return raw  # written before checksums existed (or truncated: torch.load will then fail, see below)


def _load_one(path: Path) -> dict[str, Any]:
    payload = _verified_payload(path)
    try:
        loaded = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise CheckpointError(
            f"{path} holds pickled Python objects that weights_only loading refuses (loading them could run "
            f"arbitrary code): {str(err).strip().splitlines()[-1] if str(err).strip() else err}"
        ) from None
    except (RuntimeError, EOFError, ValueError, OSError) as err:
        raise CheckpointError(f"{path} is not a readable checkpoint (truncated or corrupted): {err}") from None
    if not isinstance(loaded, dict) or loaded.get("format") != _FORMAT:
        raise CheckpointError(f"{path} is not a tdrl checkpoint (no {_FORMAT!r} marker)")
    return loaded["state"]


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Loads a checkpoint written by :func:`save_checkpoint` (``weights_only=True``), verifying its checksum.

    Falls back to ``<path>.prev`` (with a logged warning) when ``path`` is missing or cannot be read.

    Raises:
        FileNotFoundError: when neither file exists.
        CheckpointError: when no file is readable; the message names each file and what is wrong with it.
    """
    path = Path(path)
    errors = []
    for candidate in (path, _prev(path)):
        if not candidate.exists():
            continue
        try:
            state = _load_one(candidate)
        except CheckpointError as err:  # a corrupt file: try the previous one
            errors.append(str(err))
            continue
        if errors:
            logger.warning("%s; loaded the previous checkpoint %s instead", errors[0], candidate)
        return state
    if errors:
        raise CheckpointError("no readable checkpoint: " + "; ".join(errors))
    raise FileNotFoundError(f"no checkpoint at {path} (nor {_prev(path)})")


def ensure_room_to_resume(path: str | os.PathLike) -> None:
    """Raises :class:`CheckpointWriteError` if the disk holding ``path`` cannot take one more checkpoint of its size.

    Called before a run resumes, so that a full disk is reported at once rather than at the first save.

    Examples:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "ckpt.pt"
        >>> _ = save_checkpoint({"step": 1}, p)
        >>> ensure_room_to_resume(p)
    """
    path = Path(path)
    if not path.exists():
        return
    size = path.stat().st_size
    try:
        ensure_free_space(path.parent, size, what=f"next trainer checkpoint (the size of {path.name})")
    except CheckpointWriteError as err:
        raise CheckpointWriteError(
            f"cannot resume: {err}; the run would fail at its first checkpoint. Free some space ({path} is intact)",
            errno=err.errno, filename=str(path), needed=size,
        ) from None
