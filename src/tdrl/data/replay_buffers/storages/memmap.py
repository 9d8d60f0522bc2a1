"""A lazily-allocated storage whose tensors are memory-mapped files."""

from __future__ import annotations

import errno
import math
import os
import tempfile
from multiprocessing.context import get_spawning_popen
from pathlib import Path
from typing import Any

import torch
from tensordict import MemoryMappedTensor, TensorDictBase

from tdrl.data.replay_buffers.storages._objects import split_non_tensor
from tdrl.data.replay_buffers.storages.tensor import LazyTensorStorage
from tdrl.data.replay_buffers.utils import applied

__all__ = ["LazyMemmapStorage"]


class LazyMemmapStorage(LazyTensorStorage):
    """A :class:`LazyTensorStorage` whose leaves are :class:`~tensordict.MemoryMappedTensor` maps.

    With ``scratch_dir`` the files are written there (TensorDict memmap layout, with its
    ``meta.json``) and survive the process: ``TensorDict.load_memmap(scratch_dir)`` reopens them.
    Without it, each leaf lives in an anonymous map: a file created in ``/dev/shm`` (or the temporary
    directory when ``/dev/shm`` is too small) and unlinked at once, so the memory goes back to the system
    when the last process holding it ends, even one killed with ``SIGKILL``; nothing is left on disk.

    Args:
        max_size: the capacity, in items.

    Keyword Args:
        scratch_dir: directory for the memory-mapped files (a path or a ``tempfile.TemporaryDirectory``);
            ``None`` keeps them anonymous (see above).
        device: must be a CPU device (memory maps live in host memory). Defaults to ``"cpu"``.
        ndim: see :class:`TensorStorage`.
        existsok: allow ``scratch_dir`` to hold files from an earlier storage (they are overwritten).
        compilable: see :class:`Storage`.
        shared_init: accepted for TorchRL compatibility (memory maps are always shareable).
        auto_cleanup: accepted for TorchRL compatibility: anonymous maps need no cleanup, and a user
            ``scratch_dir`` is never removed.

    Examples:
        >>> from tensordict import TensorDict
        >>> storage = LazyMemmapStorage(100)
        >>> storage.set(torch.arange(2), TensorDict(obs=torch.ones(2, 3), batch_size=[2]))
        >>> type(storage._storage["obs"]).__name__, storage.get(torch.tensor([1]))["obs"]
        ('MemoryMappedTensor', tensor([[1., 1., 1.]]))
    """

    def __init__(
        self,
        max_size: int,
        *,
        scratch_dir: str | Path | tempfile.TemporaryDirectory | None = None,
        device: torch.device | str = "cpu",
        ndim: int = 1,
        existsok: bool = False,
        compilable: bool = False,
        shared_init: bool = False,
        auto_cleanup: bool | None = None,
    ) -> None:
        super().__init__(max_size, device=device, ndim=ndim, compilable=compilable)
        if isinstance(self.device, torch.device) and self.device.type != "cpu":
            raise ValueError(
                f"LazyMemmapStorage keeps data in host memory; device={device!r} is not a CPU device."
            )
        if isinstance(scratch_dir, tempfile.TemporaryDirectory):
            scratch_dir = scratch_dir.name  # rb_tutorial passes the TemporaryDirectory object itself
        self.scratch_dir = None if scratch_dir is None else str(scratch_dir)
        self.existsok = existsok
        self.shared_init = shared_init
        self.auto_cleanup = (scratch_dir is None) if auto_cleanup is None else auto_cleanup

    def _scratch(self) -> str:
        assert self.scratch_dir is not None
        Path(self.scratch_dir).mkdir(parents=True, exist_ok=True)
        if not self.existsok and any(Path(self.scratch_dir).iterdir()):
            raise RuntimeError(
                f"LazyMemmapStorage: scratch_dir {self.scratch_dir} is not empty; pass existsok=True to reuse it."
            )
        return self.scratch_dir

    def _init(self, item: torch.Tensor | TensorDictBase) -> None:
        if not isinstance(item, (torch.Tensor, TensorDictBase)):
            raise TypeError(f"LazyMemmapStorage stores tensors or TensorDicts, got {type(item).__name__}.")
        self._allocate_rows(item, self._max_size_along_dim0(single_data=item))

    def _allocate_rows(self, item: torch.Tensor | TensorDictBase, rows: int) -> None:
        self._allocate_like(item, rows)
        if self.device == "auto":
            self.device = torch.device("cpu")
        lead = (item.shape if isinstance(item, torch.Tensor) else item.batch_size)[: self.ndim - 1]
        self.max_size = rows * max(1, math.prod(lead))

    def _allocate_like(self, item: torch.Tensor | TensorDictBase, rows: int) -> None:
        item, objects = split_non_tensor(item)  # non-tensor leaves live beside the memory maps
        if self.scratch_dir is None:
            # No filename: tensordict maps a file it unlinks right after creating it (see the class doc).
            def empty(x: torch.Tensor) -> MemoryMappedTensor:
                return MemoryMappedTensor.empty((rows, *x.shape), dtype=x.dtype)

            storage: torch.Tensor | TensorDictBase
            if isinstance(item, torch.Tensor):
                storage = empty(item)
            else:
                storage = applied(
                    item,
                    empty,
                    batch_size=[rows, *item.batch_size],
                    device=torch.device("cpu") if item.device is not None else None,
                )
            self._allocated(storage, list(objects))
            return
        prefix = self._scratch()
        if isinstance(item, torch.Tensor):
            storage = MemoryMappedTensor.empty(
                (rows, *item.shape), dtype=item.dtype, filename=str(Path(prefix) / "storage.memmap")
            )
        else:
            # expand() makes zero-stride views: memmap_like allocates files without copying data.
            template = item.to("cpu").expand(rows, *item.batch_size)
            storage = template.memmap_like(prefix=prefix, existsok=True)
        _reserve_blocks(storage, prefix)
        self._allocated(storage, list(objects))

    def _adopt(self, data: torch.Tensor | TensorDictBase) -> None:
        self.max_size = math.prod(data.shape[: self.ndim])
        self._fill_from(data)

    def _fill_from(self, data: torch.Tensor | TensorDictBase) -> None:
        """Allocates maps shaped like ``data`` and copies ``data`` into them."""
        self._allocate_like(data[0], data.shape[0])
        storage = self._storage
        if isinstance(storage, TensorDictBase):
            if isinstance(data, TensorDictBase):
                storage.update_(data)
        elif isinstance(storage, torch.Tensor) and isinstance(data, torch.Tensor):
            torch.Tensor.copy_(storage, data)

    def state_dict(self) -> dict[str, Any]:
        out = super().state_dict()
        out["scratch_dir"] = self.scratch_dir
        return out

    def cleanup(self) -> bool:
        """Releases anonymous maps (their memory is freed once no view is left); returns whether it did.

        A user ``scratch_dir`` is never removed.
        """
        if self.scratch_dir is not None or self._storage is None:
            return False
        self._storage = None
        self._layout = None
        self._len = 0
        return True

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        if self.scratch_dir is None and self._storage is not None and get_spawning_popen() is None:
            # An anonymous map travels by file descriptor only while a process is being spawned; a plain
            # pickle (a copy, a file) carries the data by value and __setstate__ maps it anew.
            state["_storage"] = _by_value(self._storage)
            state["_layout"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._layout is None and self._storage is not None:
            data = self._storage
            self._storage = None
            self._fill_from(data)


def _reserve_blocks(storage: torch.Tensor | TensorDictBase, prefix: str) -> None:
    """Reserves the disk blocks of every scratch file now, so that a full disk is an ``OSError`` here.

    The files are sparse: without this, a write into a page the full disk cannot back kills the process
    with ``SIGBUS`` at some later ``extend``.
    """
    leaves = (
        [storage]
        if isinstance(storage, torch.Tensor)
        else [v for v in storage.values(True, True) if isinstance(v, torch.Tensor)]
    )
    for leaf in leaves:
        filename = getattr(leaf, "filename", None)
        nbytes = leaf.numel() * leaf.element_size()
        if filename is None or not nbytes:
            continue
        fd = os.open(filename, os.O_RDWR)
        try:
            os.posix_fallocate(fd, 0, nbytes)
        except OSError as err:
            if err.errno in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                continue  # a filesystem without fallocate: nothing to reserve with
            raise OSError(
                err.errno,
                f"LazyMemmapStorage cannot reserve {nbytes:,} bytes for {filename} in "
                f"scratch_dir {prefix}: {err.strerror}",
                filename,
            ) from None
        finally:
            os.close(fd)


def _by_value(storage: torch.Tensor | TensorDictBase) -> torch.Tensor | TensorDictBase:
    if isinstance(storage, torch.Tensor):
        return storage.as_subclass(torch.Tensor).clone()
    return applied(storage, lambda x: x.as_subclass(torch.Tensor).clone())
