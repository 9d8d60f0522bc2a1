"""On-disk format of tensor storages: the filled rows of each leaf as a raw file, described by JSON.

Format 2 (written since the reliability work of issue 13)::

    storage.json   {"format": 2, "_len", "ndim", "max_size", "is_tensor", "rows", "batch_size",
                    "leaves": [{"key": [...], "dtype": "float32", "shape": [rows, ...], "file": "leaf-0000.bin"}]}
    leaf-0000.bin  the C-contiguous bytes of rows ``[0, rows)`` of the first leaf, ...

Only the filled rows are written (1,000 items of a 100k-capacity buffer write 1,000 rows); ``batch_size``
keeps the capacity so that loading reallocates it. Files are written with plain ``write`` calls (never
through a memory map, see :mod:`tdrl._utils.safe_files`) and read with size checks; nothing is unpickled.

Format 1 (main at 6c19787 and before) stored the whole capacity as a ``TensorDict.memmap`` folder
``data/``; it still loads, without pickle (``allow_pickle=False``) and with every leaf file's size checked
against its ``meta.json`` first.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl._utils.safe_files import CheckpointError, read_into, read_json, tensor_buffer, write_file
from tdrl.data.replay_buffers.utils import build_tensordict, leaf_paths

try:  # tensordict's file naming of memmap leaves (format 1); plain keys are their own file names
    from tensordict.utils import _encode_key_for_filesystem
except ImportError:  # pragma: no cover - older tensordict
    def _encode_key_for_filesystem(key: str, *, robust: bool = True) -> str:
        return key

__all__ = ["FORMAT", "dump_tensor_storage", "filled_nbytes", "read_tensor_storage"]

FORMAT = 2
_META = "storage.json"
_LEAF_FILE = re.compile(r"leaf-\d{4,}\.bin")


def _dtype(name: Any, where: Path) -> torch.dtype:
    dtype = getattr(torch, str(name).removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise CheckpointError(f"{where}: unknown dtype {name!r}; the metadata is corrupted")
    return dtype


def _leaves(td: TensorDictBase, where: str) -> tuple[list[tuple[str, ...]], list[torch.Tensor]]:
    paths = leaf_paths(td) if type(td) is TensorDict else None
    if paths is None:
        paths = sorted((k,) if isinstance(k, str) else tuple(k) for k in td.keys(True, True))
    leaves = [td.get(p) for p in paths]
    for path, leaf in zip(paths, leaves):
        if not isinstance(leaf, torch.Tensor):
            raise TypeError(
                f"{where}: entry {path} is a {type(leaf).__name__}, not a tensor; tensor storages checkpoint "
                "tensors only (keep strings and other Python objects in a ListStorage)"
            )
    return paths, leaves


def _filled_rows(storage: Any) -> int:
    return storage._layout.rows_n if storage._is_full else storage._len_along_dim0


def filled_nbytes(storage: Any) -> int:
    """Bytes :func:`dump_tensor_storage` writes for ``storage`` (the filled rows of every leaf)."""
    if storage._storage is None:
        return 0
    rows = _filled_rows(storage)
    return sum(leaf[:rows].numel() * leaf.element_size() for leaf in storage._layout.leaves)


def dump_tensor_storage(storage: Any, directory: Path) -> None:
    """Writes ``storage`` (a ``TensorStorage``) into ``directory`` in format 2."""
    directory.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "format": FORMAT, "initialized": storage._storage is not None, "_len": int(storage._len),
        "ndim": int(storage.ndim), "max_size": int(storage.max_size),
    }
    if storage._storage is not None:
        td = storage._as_td()
        rows = _filled_rows(storage)
        paths, leaves = _leaves(td, type(storage).__name__)
        entries = []
        for i, (path, leaf) in enumerate(zip(paths, leaves)):
            part = leaf[:rows]  # rows are the first dim: a contiguous prefix of a contiguous leaf
            name = f"leaf-{i:04d}.bin"
            nbytes = part.numel() * part.element_size()
            write_file(directory / name, [tensor_buffer(part)], nbytes=nbytes)
            entries.append({"key": list(path), "dtype": str(part.dtype).removeprefix("torch."),
                            "shape": list(part.shape), "file": name})
        meta.update(is_tensor=isinstance(storage._storage, torch.Tensor), rows=rows,
                    batch_size=list(td.batch_size), leaves=entries)
        objects = storage._objects_state(rows)
        if objects:
            meta["objects"] = _json_objects(objects, type(storage).__name__)
        if storage._codec is not None:
            meta["tree"] = storage._codec.state()  # the tensorclass / pytree structure reads rebuild
    write_file(directory / _META, [json.dumps(meta).encode()])


def _json_objects(objects: dict[str, list[Any]], where: str) -> dict[str, list[Any]]:
    # Non-tensor values go into the JSON metadata: loading them runs no code (no pickle).
    for key, values in objects.items():
        try:
            json.dumps(values)
        except (TypeError, ValueError) as err:
            raise TypeError(
                f"{where}: the non-tensor key {key!r} holds values JSON cannot write ({err}); tensor storages "
                "checkpoint str, int, float, bool, None and lists/dicts of them"
            ) from None
    return objects


def _int(meta: dict[str, Any], key: str, where: Path) -> int:
    value = meta.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CheckpointError(f"{where}: {key!r} must be a non-negative integer, got {value!r}; the metadata is corrupted")
    return value


def read_tensor_storage(directory: Path, *, allow_pickle_unsafe: bool = False) -> dict[str, Any]:
    """Reads a storage folder (format 1 or 2) into ``{"initialized", "data", "_len", "is_tensor", ...}``.

    Format 2 returns the filled rows as ``data`` plus ``capacity_rows`` and ``max_size``; format 1 returns
    the whole memmapped capacity as ``data`` (``capacity_rows`` is ``None``).

    Raises:
        CheckpointError: a leaf file is missing, empty, truncated or longer than its metadata says; the
            metadata is malformed; or a format-1 folder holds pickled entries (and ``allow_pickle_unsafe``
            is not set).
    """
    meta_file = directory / _META
    meta = read_json(meta_file, what="replay-buffer storage metadata")
    if not isinstance(meta, dict):
        raise CheckpointError(f"{meta_file} must hold a JSON object, got {type(meta).__name__}")
    if not meta.get("initialized", False):
        return {"initialized": False}
    if meta.get("format") != FORMAT:
        return _read_format1(directory, meta, allow_pickle_unsafe=allow_pickle_unsafe)
    try:
        return _read_format2(directory, meta)
    except (KeyError, TypeError, ValueError) as err:
        if isinstance(err, CheckpointError):
            raise
        raise CheckpointError(f"{meta_file} is malformed ({type(err).__name__}: {err}); the metadata is corrupted") from None


def _read_format2(directory: Path, meta: dict[str, Any]) -> dict[str, Any]:
    meta_file = directory / _META
    rows, length = _int(meta, "rows", meta_file), _int(meta, "_len", meta_file)
    batch_size = meta.get("batch_size")
    if not isinstance(batch_size, list) or not batch_size or not all(isinstance(b, int) for b in batch_size):
        raise CheckpointError(f"{meta_file}: 'batch_size' must be a list of ints, got {batch_size!r}")
    paths, leaves = [], []
    for entry in meta.get("leaves", []):
        name = str(entry.get("file", ""))
        if not _LEAF_FILE.fullmatch(name):  # never a path: a crafted name must not read outside the folder
            raise CheckpointError(f"{meta_file}: leaf file name {name!r} is not of the form leaf-NNNN.bin")
        shape = [int(s) for s in entry["shape"]]
        if not shape or shape[0] != rows:
            raise CheckpointError(f"{meta_file}: leaf {entry.get('key')} has shape {shape}, expected {rows} rows")
        file = directory / name
        if not file.is_file():
            raise CheckpointError(f"{file} is missing (the storage metadata {meta_file} lists it)")
        leaves.append(read_into(file, torch.empty(shape, dtype=_dtype(entry["dtype"], meta_file))))
        paths.append(tuple(entry["key"]))
    if not leaves:
        raise CheckpointError(f"{meta_file}: an initialized storage lists no leaf files")
    is_tensor = bool(meta.get("is_tensor"))
    data = leaves[0] if is_tensor else build_tensordict(paths, leaves, torch.Size([rows, *batch_size[1:]]))
    cells_per_row = math.prod(batch_size[1:meta.get("ndim", 1)]) if meta.get("ndim", 1) > 1 else 1
    if -(-length // cells_per_row) > rows:
        raise CheckpointError(f"{meta_file}: _len={length} items do not fit in the {rows} rows written")
    objects = meta.get("objects")
    if objects is not None and not (
        isinstance(objects, dict) and all(isinstance(v, list) and len(v) <= math.prod(batch_size) for v in objects.values())
    ):
        raise CheckpointError(f"{meta_file}: 'objects' must map keys to lists of at most one value per cell")
    return {"initialized": True, "data": data, "_len": length, "is_tensor": is_tensor,
            "capacity_rows": batch_size[0], "max_size": _int(meta, "max_size", meta_file), "objects": objects,
            "tree": meta.get("tree")}


def _check_memmap_sizes(folder: Path) -> None:
    """Checks every leaf file of a ``TensorDict.memmap`` folder against the sizes in its ``meta.json``."""
    meta = read_json(folder / "meta.json", what="memmap metadata")
    if not isinstance(meta, dict):
        raise CheckpointError(f"{folder / 'meta.json'} must hold a JSON object")
    for key, entry in meta.items():
        if not isinstance(entry, dict):
            continue
        if "type" in entry:
            sub = folder / key
            if not sub.is_dir():
                sub = folder / _encode_key_for_filesystem(key)
            if sub.is_dir():
                _check_memmap_sizes(sub)
            continue
        if "dtype" not in entry or "shape" not in entry or entry.get("is_nested"):
            continue
        dtype = _dtype(entry["dtype"], folder / "meta.json")
        expected = math.prod(int(s) for s in entry["shape"]) * dtype.itemsize
        file = folder / f"{key}.memmap"
        if not file.exists():
            file = folder / f"{_encode_key_for_filesystem(key)}.memmap"
        if not file.exists():
            if expected:
                raise CheckpointError(f"{folder / (key + '.memmap')} is missing ({folder / 'meta.json'} lists it)")
            continue
        size = file.stat().st_size
        if size != expected:
            state = "empty" if size == 0 else "truncated" if size < expected else "longer than expected"
            raise CheckpointError(
                f"{file} is {state}: it holds {size:,} bytes, {expected:,} expected for shape {entry['shape']} "
                f"{dtype}; the file is corrupted (the checkpoint is not loaded)"
            )


def _read_format1(directory: Path, meta: dict[str, Any], *, allow_pickle_unsafe: bool) -> dict[str, Any]:
    folder = directory / "data"
    _check_memmap_sizes(folder)
    try:
        td = TensorDict.load_memmap(str(folder), allow_pickle=bool(allow_pickle_unsafe))
    except RuntimeError as err:
        if "pickle" not in str(err).lower():
            raise CheckpointError(f"{folder}: cannot load the memory-mapped storage: {err}") from err
        raise CheckpointError(
            f"{folder} holds pickled (non-tensor) entries; loading them could run arbitrary code, so tdrl refuses. "
            "Pass allow_pickle_unsafe=True only if you trust whoever wrote this checkpoint"
        ) from None
    return {"initialized": True, "data": td, "_len": _int(meta, "_len", directory / _META),
            "is_tensor": bool(meta.get("is_tensor")), "capacity_rows": None, "max_size": None}
