"""Reading HDF5 groups into nested dicts of arrays (h5py behind the ``h5`` extra's guard)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def _require_h5py(what: str) -> Any:
    try:
        import h5py
    except ImportError as err:
        raise ImportError(f"{what} reads HDF5 files with h5py: pip install 'tdrl[h5]'.") from err
    return h5py


def read_group(group: Any) -> dict[str, Any]:
    """The arrays of an h5py group, nested as its sub-groups; string and object datasets are left out."""
    h5py = _require_h5py("reading an HDF5 group")
    out: dict[str, Any] = {}
    for key, value in group.items():
        if isinstance(value, h5py.Group):
            out[key] = read_group(value)
        elif value.dtype.kind in "biuf":  # text and opaque entries have no tensor form (TorchRL drops them too)
            out[key] = np.asarray(value[()])
    return out


def read_file(path: Path, what: str) -> dict[str, Any]:
    h5py = _require_h5py(what)
    with h5py.File(path, "r") as file:
        return read_group(file)
