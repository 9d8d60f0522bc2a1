"""Atomic, verified, pickle-free checkpoints for replay buffers.

A checkpoint directory ``path`` holds complete snapshots ``path/ckpt-<id>/`` and a small JSON pointer
``path/LATEST`` naming the current one. A new snapshot is written into a temporary directory, gets a
``MANIFEST.json`` listing every file with its size and CRC-32, is renamed into place, and only then is
``LATEST`` replaced with :func:`os.replace` (atomic on POSIX). A crash at any point therefore leaves
``LATEST`` pointing at the previous, complete snapshot; a failed write (disk full, I/O error) removes its
temporary directory and raises :class:`~tdrl._utils.safe_files.CheckpointWriteError`, which says what was
being written, where, how many bytes were needed and that the previous checkpoint is intact.

Loading checks the manifest before anything is read (a truncated, empty or corrupted file is an error
naming it) and never unpickles arbitrary objects: tensors go through raw files or
``torch.load(weights_only=True)``, metadata through JSON. Pickled content (arbitrary Python objects in a
``ListStorage``) is written and read only with ``allow_pickle_unsafe=True``.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import shutil
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from tdrl._utils.safe_files import (
    CheckpointError,
    CheckpointWriteError,
    ensure_free_space,
    file_crc32,
    free_bytes,
    read_json,
    write_file,
    write_json_atomic,
)

__all__ = [
    "CheckpointError",
    "CheckpointWriteError",
    "check_plain",
    "load_json",
    "load_tensors",
    "resolve_checkpoint",
    "save_json",
    "save_tensors",
    "write_checkpoint",
]

_POINTER = "LATEST"
_MANIFEST = "MANIFEST.json"
_MANIFEST_FORMAT = "tdrl-replay-buffer-checkpoint-2"
_SNAPSHOT = re.compile(r"ckpt-[0-9a-f]{6,64}")
_UNSAFE_HINT = "pass allow_pickle_unsafe=True only if you trust whoever wrote it"


def _previous(root: Path) -> str:
    try:
        current = resolve_checkpoint(root, verify=False)
    except (FileNotFoundError, CheckpointError):
        return f"there was no previous checkpoint at {root}"
    return f"the previous checkpoint {current} is intact and still loads"


def _write_manifest(snapshot: Path) -> None:
    files = {}
    for file in sorted(p for p in snapshot.rglob("*") if p.is_file()):
        size, crc = file_crc32(file)
        files[file.relative_to(snapshot).as_posix()] = {"size": size, "crc32": crc}
    write_file(snapshot / _MANIFEST, [_json({"format": _MANIFEST_FORMAT, "files": files})])


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def write_checkpoint(
    path: str | os.PathLike, write_fn: Callable[[Path], None], *, needed: int = 0,
    what: str = "replay-buffer checkpoint",
) -> Path:
    """Runs ``write_fn(tmp_dir)`` and atomically publishes ``tmp_dir`` as the checkpoint at ``path``.

    Args:
        path: the checkpoint directory (created if missing).
        write_fn: writes the snapshot's files into the directory it is given.
        needed: the bytes ``write_fn`` is about to write, checked against the free space first.
        what: what is written, for error messages.

    Returns:
        The directory of the published snapshot.

    Raises:
        CheckpointWriteError: not enough free space, or writing failed (the temporary files are removed
            and the previous checkpoint is left as it was).

    Examples:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> snap = write_checkpoint(root, lambda d: save_json(d / "meta.json", {"step": 1}))
        >>> load_json(resolve_checkpoint(root) / "meta.json")
        {'step': 1}
    """
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    if needed:
        try:
            ensure_free_space(root, needed, what=what)
        except CheckpointWriteError as err:
            raise CheckpointWriteError(f"{err}; {_previous(root)}", errno=err.errno, filename=str(root),
                                       needed=needed) from None
    token = uuid.uuid4().hex[:12]
    tmp = root / f".tmp-{token}"
    tmp.mkdir()
    try:
        write_fn(tmp)
        _write_manifest(tmp)
        final = root / f"ckpt-{token}"
        os.replace(tmp, final)
        write_json_atomic(root / _POINTER, {"current": final.name})
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(err, CheckpointWriteError):
            raise
        size = f"about {needed:,} bytes" if needed else "an unknown number of bytes"
        raise CheckpointWriteError(
            f"writing the {what} at {root} failed while writing {err.filename or tmp}: {err.strerror or err} "
            f"(errno {err.errno}). The checkpoint needs {size}; {free_bytes(root):,} bytes are free. The temporary "
            f"files were removed and {_previous(root)}",
            errno=err.errno, filename=err.filename, needed=needed or None,
        ) from err
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for old in root.iterdir():
        if old.name != final.name and (old.name.startswith("ckpt-") or old.name.startswith(".tmp-")):
            shutil.rmtree(old, ignore_errors=True)
    return final


def _verify(snapshot: Path) -> None:
    manifest_file = snapshot / _MANIFEST
    if not manifest_file.exists():
        return  # format 1 (main at 6c19787 and before): the loaders check each file's size instead
    manifest = read_json(manifest_file, what="checkpoint manifest")
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict):
        raise CheckpointError(f"{manifest_file} has no 'files' table; the manifest is corrupted")
    for name, entry in files.items():
        file = (snapshot / name).resolve()
        if snapshot.resolve() not in file.parents:
            raise CheckpointError(f"{manifest_file} lists {name!r}, which lies outside the checkpoint")
        if not file.is_file():
            raise CheckpointError(f"{snapshot / name} is missing ({manifest_file} lists it)")
        size, crc = file_crc32(file)
        if size != entry.get("size"):
            state = "empty" if size == 0 else "truncated" if size < entry.get("size", 0) else "longer than written"
            raise CheckpointError(f"{snapshot / name} is {state}: {size:,} bytes, {entry.get('size'):,} were written; "
                                  "the checkpoint is corrupted and is not loaded")
        if crc != entry.get("crc32"):
            raise CheckpointError(f"{snapshot / name} is corrupted: its CRC-32 is {crc:#010x}, {entry.get('crc32'):#010x} "
                                  "was written (same size, different bytes); the checkpoint is not loaded")


def resolve_checkpoint(path: str | os.PathLike, *, verify: bool = True) -> Path:
    """The snapshot directory the checkpoint at ``path`` currently points to, its files verified.

    Args:
        path: a directory written by :func:`write_checkpoint`.
        verify: check every file against the snapshot's manifest (size and CRC-32).

    Returns:
        The complete snapshot directory.

    Raises:
        FileNotFoundError: if ``path`` holds no published checkpoint.
        CheckpointError: ``LATEST`` or the manifest is malformed, or a file is missing, truncated or corrupted.
    """
    root = Path(path)
    pointer = root / _POINTER
    if not pointer.exists():
        raise FileNotFoundError(f"No replay-buffer checkpoint at {root}: missing {_POINTER} pointer file.")
    content = read_json(pointer, what="checkpoint pointer")
    current = content.get("current") if isinstance(content, dict) else None
    if not isinstance(current, str) or not _SNAPSHOT.fullmatch(current):
        raise CheckpointError(f"the checkpoint pointer {pointer} must name a ckpt-<id> folder, got {content!r}")
    snapshot = root / current
    if not snapshot.is_dir():
        raise CheckpointError(f"the checkpoint pointer {pointer} names {current}, which does not exist")
    if verify:
        _verify(snapshot)
    return snapshot


def save_json(file: Path, obj: Any) -> None:
    """Writes ``obj`` (plain Python values) to ``file`` as JSON."""
    write_file(file, [_json(obj)])


def load_json(file: Path) -> Any:
    """Reads JSON written by :func:`save_json`; a malformed file is a :class:`CheckpointError` naming it."""
    return read_json(file)


_PLAIN = (str, int, float, bool, type(None), torch.Tensor, torch.dtype, torch.device, torch.Size)


def check_plain(obj: Any, where: str) -> None:
    """Raises ``TypeError`` unless ``obj`` is tensors / numbers / strings in (nested) dicts, lists, tuples, sets.

    Those are what ``torch.load(weights_only=True)`` reads back without running code.

    Examples:
        >>> check_plain({"a": [torch.zeros(1), "x", None]}, "item 0")
        >>> try:
        ...     check_plain({"a": range(3)}, "item 3")
        ... except TypeError as err:
        ...     print(str(err)[:42])
        item 3 holds a range, which only pickle ca
    """
    if isinstance(obj, _PLAIN):
        return
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            check_plain(key, where)
            check_plain(value, where)
        return
    if type(obj) in (list, tuple, set, frozenset):
        for value in obj:
            check_plain(value, where)
        return
    raise TypeError(
        f"{where} holds a {type(obj).__name__}, which only pickle can store; pickled checkpoints can run "
        "arbitrary code when loaded, so tdrl writes tensors, numbers, strings, lists and dicts only. Pass "
        "allow_pickle_unsafe=True to dumps (and later to loads) to pickle it anyway"
    )


def save_tensors(file: Path, obj: Any) -> None:
    """Saves nested dicts / lists of tensors and plain values with :func:`torch.save`.

    The bytes are produced in memory first, so that a full disk is an ``OSError`` from a plain write (not
    torch's ``inline_container`` error) and the free space can be checked before writing.
    """
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    view = buffer.getbuffer()
    ensure_free_space(file.parent, len(view), what=f"file {file.name}")
    write_file(file, [view], nbytes=len(view))


def load_tensors(file: Path, *, allow_pickle_unsafe: bool = False) -> Any:
    """Loads :func:`save_tensors` output with ``weights_only=True`` (no arbitrary unpickling).

    Raises:
        CheckpointError: the file holds pickled objects (unless ``allow_pickle_unsafe``), or it is not a
            readable torch file.
    """
    if not Path(file).is_file():
        raise FileNotFoundError(f"{file} does not exist")
    try:
        return torch.load(file, weights_only=not allow_pickle_unsafe)
    except pickle.UnpicklingError as err:
        first = str(err).strip().splitlines()[-1] if str(err).strip() else ""
        raise CheckpointError(
            f"{file} holds pickled Python objects that tdrl does not load by default (loading them could run "
            f"arbitrary code: {first}); {_UNSAFE_HINT}"
        ) from None
    except (RuntimeError, EOFError, ValueError) as err:
        raise CheckpointError(f"{file} is not a readable torch file (truncated or corrupted?): {err}") from None
