"""Checkpoint file I/O that fails with a clear Python error instead of a crash or silent zeros.

Writes use ordinary ``write`` calls (never stores through a memory map, which turn a full disk into a
``SIGBUS`` that kills the process), reserve their size first with :func:`os.posix_fallocate` where the
filesystem supports it, and are flushed and fsync'ed. Reads check each file's size (and, where the writer
recorded one, its CRC-32) before any byte is used, so that a truncated or corrupted file is an error naming
the file, never a tensor of zeros.
"""

from __future__ import annotations

import errno as _errno
import json
import os
import shutil
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "CheckpointError",
    "CheckpointWriteError",
    "ensure_free_space",
    "file_crc32",
    "free_bytes",
    "read_into",
    "read_json",
    "tensor_buffer",
    "write_file",
    "write_json_atomic",
]

_CHUNK = 16 << 20  # 16 MiB: large enough for full disk bandwidth, small enough to bound memory
_MARGIN = 1 << 20  # free space kept beyond a write's own size (metadata, directory entries)
_NO_FALLOCATE = {_errno.EOPNOTSUPP, _errno.ENOSYS, _errno.EINVAL}
_DISK_FULL = {_errno.ENOSPC, _errno.EDQUOT, _errno.EFBIG}


class CheckpointError(ValueError):
    """A checkpoint cannot be used: a file is missing, truncated, corrupted, or holds refused (pickled) data.

    The message names the file and what was expected.
    """


class CheckpointWriteError(CheckpointError, OSError):
    """Writing a checkpoint failed (disk full, file too large, I/O error); nothing half-written was published.

    Attributes:
        errno: the operating-system error number (``errno.ENOSPC`` for a full disk), or ``None``.
        filename: the file being written when the error happened.
        needed: the bytes the whole checkpoint needed, when known.
    """

    def __init__(self, message: str, *, errno: int | None = None, filename: str | None = None,
                 needed: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno
        self.filename = filename
        self.needed = needed

    def __str__(self) -> str:
        return str(self.args[0])

    @property
    def disk_full(self) -> bool:
        """Whether the cause is a full disk, an exhausted quota or a file-size limit."""
        return self.errno in _DISK_FULL


def free_bytes(directory: str | os.PathLike) -> int:
    """Free bytes (for an unprivileged user) on the filesystem holding ``directory`` or its nearest parent.

    Examples:
        >>> free_bytes(".") > 0
        True
    """
    path = Path(directory).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def ensure_free_space(directory: str | os.PathLike, needed: int, *, what: str) -> None:
    """Raises :class:`CheckpointWriteError` (``ENOSPC``) if ``directory`` has less than ``needed`` bytes free.

    Args:
        directory: where the files will be written.
        needed: the bytes about to be written.
        what: what is being written, for the message (e.g. ``"replay-buffer checkpoint"``).

    Examples:
        >>> ensure_free_space(".", 1, what="a test file")
        >>> try:
        ...     ensure_free_space(".", 1 << 62, what="a huge file")
        ... except CheckpointWriteError as err:
        ...     print(err.disk_full)
        True
    """
    free = free_bytes(directory)
    if free < needed + _MARGIN:
        raise CheckpointWriteError(
            f"not enough disk space to write the {what} in {directory}: it needs {needed:,} bytes, "
            f"{free:,} are free (disk full?). Nothing was written",
            errno=_errno.ENOSPC, filename=str(directory), needed=needed,
        )


def tensor_buffer(tensor: torch.Tensor) -> memoryview:
    """The raw bytes of a CPU tensor as a zero-copy ``memoryview`` (contiguous copies are made if needed).

    Examples:
        >>> bytes(tensor_buffer(torch.tensor([1, 2], dtype=torch.uint8)))
        b'\\x01\\x02'
    """
    t = tensor.detach()
    if type(t) is not torch.Tensor:
        t = t.as_subclass(torch.Tensor)  # MemoryMappedTensor: no __torch_function__ on the views below
    if t.device.type != "cpu":
        t = t.cpu()
    if not t.is_contiguous():
        t = t.contiguous()
    return memoryview(t.reshape(-1).view(torch.uint8).numpy())


def write_file(path: str | os.PathLike, chunks: Iterable[bytes | memoryview], *, nbytes: int | None = None) -> int:
    """Writes ``chunks`` to a new file ``path`` with plain writes, then flushes and fsyncs it.

    With ``nbytes``, the file's blocks are reserved first (:func:`os.posix_fallocate`), so that a full disk
    fails here, with ``ENOSPC``, before any data is written.

    Returns:
        The number of bytes written.

    Raises:
        OSError: with ``filename`` set to ``path`` (the file is removed).

    Examples:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "f.bin"
        >>> write_file(p, [b"ab", b"c"], nbytes=3), p.read_bytes()
        (3, b'abc')
    """
    path = Path(path)
    written = 0
    try:
        with open(path, "wb") as f:
            if nbytes:
                try:
                    os.posix_fallocate(f.fileno(), 0, nbytes)
                except OSError as err:
                    if err.errno not in _NO_FALLOCATE:
                        raise
            for chunk in chunks:
                view = memoryview(chunk).cast("B")
                for start in range(0, len(view), _CHUNK):
                    written += f.write(view[start:start + _CHUNK])
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:
        path.unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror or str(err), str(path)) from err
    return written


def write_json_atomic(path: str | os.PathLike, obj: Any) -> None:
    """Writes ``obj`` as JSON to ``path`` through a temporary file, fsync and :func:`os.replace`.

    Examples:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "meta.json"
        >>> write_json_atomic(p, {"a": 1}); read_json(p)
        {'a': 1}
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    write_file(tmp, [json.dumps(obj).encode()])
    os.replace(tmp, path)


def read_json(path: str | os.PathLike, *, what: str = "checkpoint metadata") -> Any:
    """Parses the JSON file ``path``; a missing, empty or malformed file is an error naming it.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CheckpointError: ``path`` is not valid JSON.

    Examples:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "LATEST"
        >>> _ = p.write_text("{garbage")
        >>> try:
        ...     read_json(p, what="checkpoint pointer")
        ... except CheckpointError as err:
        ...     print(str(err).split(":")[0])
        the checkpoint pointer /... is not valid JSON
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"the {what} {path} does not exist")
    raw = path.read_bytes()
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        size = "an empty file" if not raw else f"{len(raw)} bytes"
        raise CheckpointError(f"the {what} {path} is not valid JSON: {err} ({size}); the file is corrupted") from None


def file_crc32(path: str | os.PathLike) -> tuple[int, int]:
    """``(size, crc32)`` of the file ``path``, read in 16 MiB chunks.

    Examples:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "f"
        >>> _ = p.write_bytes(b"abc")
        >>> file_crc32(p)
        (3, 891568578)
    """
    crc, size = 0, 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return size, crc


def read_into(path: str | os.PathLike, out: torch.Tensor) -> torch.Tensor:
    """Fills the contiguous CPU tensor ``out`` with the bytes of ``path``, which must have exactly its size.

    Raises:
        CheckpointError: the file's size differs from ``out``'s byte size (truncated, empty or padded file).

    Examples:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "x.bin"
        >>> _ = write_file(p, [tensor_buffer(torch.arange(3.0))])
        >>> read_into(p, torch.empty(3))
        tensor([0., 1., 2.])
    """
    path = Path(path)
    expected = out.numel() * out.element_size()
    size = path.stat().st_size
    if size != expected:
        state = "empty" if size == 0 else ("truncated" if size < expected else "longer than expected")
        raise CheckpointError(
            f"{path} is {state}: it holds {size:,} bytes, {expected:,} expected for a {out.dtype} tensor of shape "
            f"{tuple(out.shape)}; the file is corrupted (the checkpoint is not loaded)"
        )
    view = tensor_buffer(out) if out.is_contiguous() and type(out) is torch.Tensor else None
    if view is None:
        raise ValueError("read_into needs a contiguous plain CPU tensor")
    with open(path, "rb") as f:
        for start in range(0, expected, _CHUNK):
            got = f.readinto(view[start:start + _CHUNK])
            if got != min(_CHUNK, expected - start):
                raise CheckpointError(f"{path} changed while being read (short read at byte {start + (got or 0)})")
    return out
