"""Storage checkpointers: how a storage's content is laid out on disk by ``dumps`` / ``loads``.

``ReplayBuffer(checkpointer=...)`` (or ``storage.checkpointer = ...``) picks one; without one a storage
writes tdrl's native layout. Each checkpointer writes inside the buffer's atomic snapshot directory (see
:mod:`tdrl.data.replay_buffers.checkpointers`), so a crash mid-write still leaves the previous checkpoint.

- :class:`TensorStorageCheckpointer`: the native layout, or, with save hooks, the hooks' output written as
  a memory-mapped TensorDict (read back through the load hooks).
- :class:`FlatStorageCheckpointer` / :class:`NestedStorageCheckpointer`: TED data written compactly
  (:class:`~tdrl.data.replay_buffers.TED2Flat` / :class:`~tdrl.data.replay_buffers.TED2Nested`).
- :class:`H5StorageCheckpointer`: the nested layout in one HDF5 file (needs ``h5py``: ``pip install tdrl[h5]``).
- :class:`ListStorageCheckpointer`, :class:`CompressedListStorageCheckpointer`,
  :class:`StorageEnsembleCheckpointer`: the native layouts of those storages.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from tensordict import NestedKey, TensorDict, TensorDictBase

from tdrl.data.replay_buffers.samplers._storage_read import last_row
from tdrl.data.replay_buffers.ted import Flat2TED, H5Combine, H5Split, Nested2TED, TED2Flat, TED2Nested

try:
    import h5py
except ImportError:  # the ``h5`` extra
    h5py = None

__all__ = [
    "CompressedListStorageCheckpointer",
    "FlatStorageCheckpointer",
    "H5StorageCheckpointer",
    "ListStorageCheckpointer",
    "NestedStorageCheckpointer",
    "StorageCheckpointerBase",
    "StorageEnsembleCheckpointer",
    "TensorStorageCheckpointer",
]

_METADATA = "storage_metadata.json"
Hook = Callable[..., Any]


class StorageCheckpointerBase(abc.ABC):
    """Base class of storage checkpointers: ``dumps(storage, path)`` and ``loads(storage, path)``.

    Save hooks transform the storage content before it is written, load hooks what is read back (in
    registration order). Hooks with ``shift`` / ``is_full`` attributes get the storage's write position.

    Examples:
        >>> class Native(StorageCheckpointerBase):
        ...     def dumps(self, storage, path): storage.dumps(path)
        ...     def loads(self, storage, path): storage.loads(path)
        >>> Native().register_save_hook(print)
    """

    def __init__(self) -> None:
        self._save_hooks: list[Hook] = []
        self._load_hooks: list[Hook] = []

    def register_save_hook(self, hook: Hook) -> None:
        """Appends a hook applied to the storage content before it is written."""
        self._save_hooks.append(hook)

    def register_load_hook(self, hook: Hook) -> None:
        """Appends a hook applied to the content read back."""
        self._load_hooks.append(hook)

    def _set_hooks_shift_is_full(self, storage: Any) -> None:
        cursor = last_row(getattr(storage, "_last_cursor", None), storage)
        shift = 0 if cursor is None else cursor + 1
        for hook in self._save_hooks:
            if hasattr(hook, "is_full"):
                hook.is_full = bool(storage._is_full)
            if hasattr(hook, "shift"):
                hook.shift = shift

    @abc.abstractmethod
    def dumps(self, storage: Any, path: str | Path) -> None:
        """Writes ``storage`` under the directory ``path``."""

    @abc.abstractmethod
    def loads(self, storage: Any, path: str | Path) -> None:
        """Restores ``storage`` from the directory ``path``."""


class _NativeCheckpointer(StorageCheckpointerBase):
    """Writes a storage in its own (native) layout."""

    def dumps(self, storage: Any, path: str | Path) -> None:
        storage._dump_into(Path(path))

    def loads(self, storage: Any, path: str | Path) -> None:
        storage._load_from(Path(path))


class ListStorageCheckpointer(_NativeCheckpointer):
    """The native layout of a :class:`~tdrl.data.ListStorage` (TorchRL 0.14.1 cannot save one this way).

    Examples:
        >>> import tempfile, torch
        >>> from tdrl.data import ListStorage
        >>> storage = ListStorage(4)
        >>> storage.set(range(2), [torch.zeros(1), torch.ones(1)])
        >>> with tempfile.TemporaryDirectory() as d:
        ...     ListStorageCheckpointer().dumps(storage, d)
        ...     copy = ListStorage(4)
        ...     ListStorageCheckpointer().loads(copy, d)
        >>> copy[1]
        tensor([1.])
    """


class CompressedListStorageCheckpointer(_NativeCheckpointer):
    """The native layout of a :class:`~tdrl.data.CompressedListStorage` (compressed bytes and metadata).

    Examples:
        >>> import tempfile, torch
        >>> from tdrl.data import CompressedListStorage
        >>> storage = CompressedListStorage(4)
        >>> storage.set(range(2), [torch.zeros(3), torch.arange(3.0)])
        >>> with tempfile.TemporaryDirectory() as d:
        ...     CompressedListStorageCheckpointer().dumps(storage, d)
        ...     copy = CompressedListStorage(4)
        ...     CompressedListStorageCheckpointer().loads(copy, d)
        ...
        >>> len(copy), copy[1]
        (2, tensor([0., 1., 2.]))
    """


class StorageEnsembleCheckpointer(StorageCheckpointerBase):
    """Writes each member of a :class:`~tdrl.data.StorageEnsemble` under ``path/<i>`` with its own layout.

    Examples:
        >>> import tempfile, torch
        >>> from tdrl.data import ListStorage, StorageEnsemble
        >>> def ensemble():
        ...     return StorageEnsemble(ListStorage(2), ListStorage(2))
        ...
        >>> storage = ensemble()
        >>> storage._storages[0].set(0, torch.ones(1))
        >>> with tempfile.TemporaryDirectory() as d:
        ...     StorageEnsembleCheckpointer().dumps(storage, d)
        ...     copy = ensemble()
        ...     StorageEnsembleCheckpointer().loads(copy, d)
        ...
        >>> len(copy._storages[0]), len(copy._storages[1]), copy._storages[0][0]
        (1, 0, tensor([1.]))
    """

    def dumps(self, storage: Any, path: str | Path) -> None:
        root = Path(path)
        root.mkdir(parents=True, exist_ok=True)
        empty = [i for i, member in enumerate(storage._storages) if not len(member)]
        (root / "metadata.json").write_text(json.dumps({"empty_members": empty}))
        for i, member in enumerate(storage._storages):
            if i not in empty:
                _checkpointer_of(member).dumps(member, root / str(i))

    def loads(self, storage: Any, path: str | Path) -> None:
        root = Path(path)
        empty = set(json.loads((root / "metadata.json").read_text())["empty_members"])
        for i, member in enumerate(storage._storages):
            if i in empty:
                member._empty()
            else:
                _checkpointer_of(member).loads(member, root / str(i))


def _checkpointer_of(storage: Any) -> StorageCheckpointerBase:
    checkpointer = getattr(storage, "checkpointer", None)
    return _NativeCheckpointer() if checkpointer is None else checkpointer


def _content(storage: Any) -> TensorDictBase:
    if not getattr(storage, "initialized", len(storage) > 0):
        raise RuntimeError(f"Cannot save a non-initialized {type(storage).__name__}.")
    content = storage._storage
    if not isinstance(content, TensorDictBase):
        raise TypeError(f"Save hooks need a storage of TensorDicts, got {type(content).__name__} content.")
    return content


def _restore(storage: Any, data: TensorDictBase, length: int, cursor: int | None) -> None:
    steps = data.shape[0]
    if storage.initialized:
        # Flat2TED restores root done flags a TED step carries; keep only the entries this storage holds.
        data = data.select(*storage._storage.keys(True, True), strict=False)
    else:
        storage._init(data[0])
    storage._storage[:steps] = data
    storage._len = length
    storage._last_cursor = cursor


class TensorStorageCheckpointer(StorageCheckpointerBase):
    """Tensor storages: the native layout, or the save hooks' output as a memory-mapped TensorDict.

    Examples:
        >>> import tempfile, torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> storage = LazyTensorStorage(4)
        >>> storage.set(torch.arange(3), TensorDict({"x": torch.arange(3)}, [3]))
        >>> with tempfile.TemporaryDirectory() as d:
        ...     TensorStorageCheckpointer().dumps(storage, d)
        ...     copy = LazyTensorStorage(4)
        ...     TensorStorageCheckpointer().loads(copy, d)
        >>> copy[:]["x"]
        tensor([0, 1, 2])
    """

    def dumps(self, storage: Any, path: str | Path) -> None:
        root = Path(path)
        if not self._save_hooks:
            storage._dump_into(root)
            return
        content = _content(storage)
        self._set_hooks_shift_is_full(storage)
        data: Any = content
        for hook in self._save_hooks:
            data = hook(data)
        root.mkdir(parents=True, exist_ok=True)
        self._write(data, root)
        cursor = last_row(getattr(storage, "_last_cursor", None), storage)
        (root / _METADATA).write_text(json.dumps({"_len": storage._len, "cursor": cursor, "hooks": True}))

    def _write(self, data: TensorDictBase, root: Path) -> None:
        data.memmap(root / "data", copy_existing=True)

    def _read(self, root: Path) -> TensorDictBase:
        return TensorDict.load_memmap(root / "data").to_tensordict()

    def loads(self, storage: Any, path: str | Path) -> None:
        root = Path(path)
        meta_file = root / _METADATA
        if not meta_file.exists():
            storage._load_from(root)
            return
        meta = json.loads(meta_file.read_text())
        data: Any = self._read(root)
        for hook in self._load_hooks:
            data = hook(data)
        _restore(storage, data, int(meta["_len"]), meta["cursor"])


def _ted_kwargs(done_keys: Iterable[NestedKey] | None, reward_keys: Iterable[NestedKey] | None) -> dict:
    kwargs: dict[str, Any] = {}
    if done_keys is not None:
        kwargs["done_keys"] = done_keys
    if reward_keys is not None:
        kwargs["reward_keys"] = reward_keys
    return kwargs


class FlatStorageCheckpointer(TensorStorageCheckpointer):
    """Writes TED data compactly (:class:`~tdrl.data.replay_buffers.TED2Flat`): each ``("next", obs)`` once.

    Assumes the TED conventions: root done flags are False and ``("next", obs)`` at ``t`` equals ``obs`` at
    ``t + 1`` inside a trajectory.

    Args:
        done_keys: done entries. Defaults to :data:`~tdrl.data.replay_buffers.DEFAULT_DONE_KEYS`.
        reward_keys: reward entries. Defaults to ``("reward",)``.

    Examples:
        >>> import tempfile, torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> done = torch.tensor([False, False, True]).unsqueeze(-1)
        >>> nxt = {"observation": torch.arange(1.0, 4.0), "reward": torch.ones(3, 1), "done": done, "terminated": done}
        >>> data = TensorDict(observation=torch.arange(3.0), done=torch.zeros(3, 1, dtype=torch.bool),
        ...                   terminated=torch.zeros(3, 1, dtype=torch.bool), next=nxt, batch_size=[3])
        >>> storage = LazyTensorStorage(3)
        >>> storage.set(torch.arange(3), data)
        >>> with tempfile.TemporaryDirectory() as d:
        ...     FlatStorageCheckpointer().dumps(storage, d)
        ...     copy = LazyTensorStorage(3)
        ...     FlatStorageCheckpointer().loads(copy, d)
        ...
        >>> copy[:]["next", "observation"]
        tensor([1., 2., 3.])
    """

    def __init__(
        self, done_keys: Iterable[NestedKey] | None = None, reward_keys: Iterable[NestedKey] | None = None
    ) -> None:
        super().__init__()
        kwargs = _ted_kwargs(done_keys, reward_keys)
        self._save_hooks = [TED2Flat(**kwargs)]
        self._load_hooks = [Flat2TED(**kwargs)]


class NestedStorageCheckpointer(FlatStorageCheckpointer):
    """Like :class:`FlatStorageCheckpointer`, one trajectory per row (:class:`~tdrl.data.replay_buffers.TED2Nested`).

    On disk each trajectory is its own memory-mapped group (``traj_<i>``), read back as nested tensors.

    Examples:
        >>> import os, tempfile, torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> done = torch.tensor([False, True, False, True]).unsqueeze(-1)  # two trajectories of two steps
        >>> root = TensorDict(observation=torch.arange(4.0), done=torch.zeros_like(done), batch_size=[4])
        >>> root["next"] = TensorDict(observation=torch.arange(1.0, 5.0), reward=torch.ones(4, 1), done=done,
        ...                           batch_size=[4])
        >>> storage = LazyTensorStorage(4)
        >>> storage.set(torch.arange(4), root)
        >>> with tempfile.TemporaryDirectory() as d:
        ...     NestedStorageCheckpointer(done_keys=["done"]).dumps(storage, d)
        ...     groups = sorted(g for g in os.listdir(os.path.join(d, "data")) if g.startswith("traj"))
        ...     copy = LazyTensorStorage(4)
        ...     NestedStorageCheckpointer(done_keys=["done"]).loads(copy, d)
        ...
        >>> groups, copy[:]["observation"]
        (['traj_0', 'traj_1'], tensor([0., 1., 2., 3.]))
    """

    def __init__(
        self, done_keys: Iterable[NestedKey] | None = None, reward_keys: Iterable[NestedKey] | None = None
    ) -> None:
        super().__init__()
        kwargs = _ted_kwargs(done_keys, reward_keys)
        self._save_hooks = [TED2Nested(**kwargs)]
        self._load_hooks = [Nested2TED(**kwargs)]

    def _write(self, data: TensorDictBase, root: Path) -> None:
        super()._write(H5Split()(data) if data.batch_dims else data, root)

    def _read(self, root: Path) -> TensorDictBase:
        return H5Combine()(super()._read(root))


def _h5_write(group: Any, data: TensorDictBase, kwargs: Mapping[str, Any]) -> None:
    for key in data.keys():
        value = data.get(key)
        if isinstance(value, TensorDictBase):
            _h5_write(group.create_group(key), value, kwargs)
        elif isinstance(value, torch.Tensor):
            group.create_dataset(key, data=value.cpu().numpy(), **kwargs)
        else:
            group.attrs[key] = json.dumps(data.get_non_tensor(key))


def _h5_read(group: Any) -> TensorDict:
    out = TensorDict()
    for key, value in group.items():
        if isinstance(value, h5py.Group):
            out.set(key, _h5_read(value))
        else:
            out.set(key, torch.from_numpy(value[()]))
    for key, value in group.attrs.items():
        if not isinstance(value, str) or key.startswith("_tdrl_"):
            continue
        decoded = json.loads(value)
        out.set_non_tensor(key, tuple(decoded) if isinstance(decoded, list) else decoded)
    return out


class H5StorageCheckpointer(NestedStorageCheckpointer):
    """Writes TED data compactly into one HDF5 file (one group per trajectory). Needs ``h5py``.

    Keyword Args:
        checkpoint_file: the file name inside the checkpoint directory (ignored when the path given to
            ``dumps`` / ``loads`` ends with ``.h5``). Defaults to ``"checkpoint.h5"``.
        done_keys: done entries. Defaults to :data:`~tdrl.data.replay_buffers.DEFAULT_DONE_KEYS`.
        reward_keys: reward entries. Defaults to ``("reward",)``.
        h5_kwargs: keyword arguments of ``h5py.Group.create_dataset`` (e.g. ``compression="gzip"``).

    Examples:
        >>> import tempfile, torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> done = torch.tensor([[False], [True], [False]])
        >>> td = TensorDict({"obs": torch.arange(3.0), ("next", "obs"): torch.arange(1.0, 4.0),
        ...                  ("next", "done"): done}, [3])
        >>> storage = LazyTensorStorage(3)
        >>> storage.set(torch.arange(3), td)
        >>> with tempfile.TemporaryDirectory() as d:
        ...     H5StorageCheckpointer().dumps(storage, d)
        ...     copy = LazyTensorStorage(3)
        ...     H5StorageCheckpointer().loads(copy, d)
        >>> torch.equal(copy[:]["next", "obs"], td["next", "obs"])
        True
    """

    def __init__(
        self,
        *,
        checkpoint_file: str = "checkpoint.h5",
        done_keys: Iterable[NestedKey] | None = None,
        reward_keys: Iterable[NestedKey] | None = None,
        h5_kwargs: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None,
    ) -> None:
        if h5py is None:
            raise ImportError(
                "H5StorageCheckpointer needs h5py: pip install 'tdrl[h5]' (or pip install h5py)."
            )
        super().__init__(done_keys=done_keys, reward_keys=reward_keys)
        kwargs = _ted_kwargs(done_keys, reward_keys)
        self._save_hooks = [TED2Nested(**kwargs), H5Split()]
        self._load_hooks = [H5Combine(), Nested2TED(**kwargs)]
        self.kwargs = {} if h5_kwargs is None else dict(h5_kwargs)
        self.checkpoint_file = checkpoint_file

    def _file(self, path: str | Path) -> Path:
        path = Path(path)
        if path.suffix == ".h5":
            return path
        path.mkdir(parents=True, exist_ok=True)
        return path / self.checkpoint_file

    def dumps(self, storage: Any, path: str | Path) -> None:
        file = self._file(path)
        content = _content(storage)
        self._set_hooks_shift_is_full(storage)
        data: Any = content
        for hook in self._save_hooks:
            data = hook(data)
        cursor = last_row(getattr(storage, "_last_cursor", None), storage)
        with h5py.File(file, "w") as handle:
            _h5_write(handle, data, self.kwargs)
            handle.attrs["_tdrl_len"] = int(storage._len)
            handle.attrs["_tdrl_cursor"] = -1 if cursor is None else int(cursor)

    def loads(self, storage: Any, path: str | Path) -> None:
        with h5py.File(self._file(path), "r") as handle:
            length, cursor = int(handle.attrs["_tdrl_len"]), int(handle.attrs["_tdrl_cursor"])
            data: Any = _h5_read(handle)
        for hook in self._load_hooks:
            data = hook(data)
        _restore(storage, data, length, None if cursor < 0 else cursor)
