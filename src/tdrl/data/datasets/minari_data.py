"""``MinariExperienceReplay``: Minari datasets (HDF5 storage) read from the local Minari cache."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

from tdrl._utils.trajectories import split_trajectories
from tdrl.data.datasets._h5 import read_file
from tdrl.data.datasets.common import (
    BaseDatasetExperienceReplay,
    _default_writer,
    _get_root_dir,
    _load_storage,
    _memmap_storage,
    _missing_dataset,
)
from tdrl.data.replay_buffers import Sampler, Writer
from tdrl.data.tensor_specs import Bounded, Categorical, Composite, TensorSpec, Unbounded

__all__ = ["MinariExperienceReplay"]

_RENAME = {"observations": "observation", "actions": "action", "infos": "info", "rewards": "reward"}
_RENAME.update({"terminations": "terminated", "truncations": "truncated"})
# Entries with one more step than the actions (the reset value first): split into current / next.
_STATEFUL = ("observations", "state", "infos")
_NEXT_ONLY = ("rewards", "terminations", "truncations")


def minari_datasets_path() -> Path:
    """Minari's local cache: ``$MINARI_DATASETS_PATH``, else ``~/.minari/datasets``."""
    return Path(os.environ.get("MINARI_DATASETS_PATH", os.path.expanduser("~/.minari/datasets")))


def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array))


def _pad_front(entry: Any, length: int) -> Any:
    """Brings an info entry to ``length`` steps: a missing first (reset) value is filled with zeros."""
    if isinstance(entry, dict):
        return {k: _pad_front(v, length) for k, v in entry.items()}
    if entry.shape[0] == length:
        return entry
    if entry.shape[0] == length - 1:
        return np.concatenate([np.zeros_like(entry[:1]), entry], 0)
    raise ValueError(f"an info entry has {entry.shape[0]} steps where {length} (or {length - 1}) were expected.")


def _split_stateful(entry: Any, key: str, steps: int) -> tuple[Any, Any]:
    if isinstance(entry, dict):
        pairs = {k: _split_stateful(v, key, steps) for k, v in entry.items()}
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
    if entry.shape[0] != steps + 1:
        raise ValueError(f"Minari entry {key!r} has {entry.shape[0]} steps, expected {steps + 1} (actions + 1).")
    return entry[:-1], entry[1:]


def _length(entry: Any) -> int:
    return _length(next(iter(entry.values()))) if isinstance(entry, dict) else int(entry.shape[0])


def _episode_td(episode: dict[str, Any], number: int) -> TensorDict:
    if "actions" not in episode:
        raise KeyError(f"Minari episode_{number} has no 'actions' entry (keys: {sorted(episode)}).")
    steps = _length(episode["actions"])
    current: dict[str, Any] = {"episode": np.full(steps, number, dtype=np.int64)}
    nxt: dict[str, Any] = {}
    for key, value in episode.items():
        name = _RENAME.get(key, key)
        if key in _STATEFUL:
            value = _pad_front(value, steps + 1) if key == "infos" else value
            current[name], nxt[name] = _split_stateful(value, key, steps)
        elif key in _NEXT_ONLY:
            nxt[name] = value.reshape(steps, 1)
        else:
            current[name] = value
    for flag in ("terminated", "truncated"):
        if flag not in nxt:
            raise KeyError(f"Minari episode_{number} has no {flag!r} entry ('terminations'/'truncations').")
    nxt["done"] = nxt["terminated"] | nxt["truncated"]
    current["next"] = nxt
    return TensorDict(_to_tensors(current), batch_size=[steps])


def _to_tensors(tree: dict[str, Any]) -> dict[str, Any]:
    return {k: _to_tensors(v) if isinstance(v, dict) else _tensor(v) for k, v in tree.items()}


_DTYPES = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64}
_DTYPES.update({"int64": torch.int64, "int32": torch.int32, "uint8": torch.uint8, "bool": torch.bool})


def space_to_spec(space: dict[str, Any] | str | None) -> TensorSpec | None:
    """A Minari-serialized gymnasium space (``Box``, ``Discrete``, ``Dict``) as a tdrl spec."""
    if space is None:
        return None
    if isinstance(space, str):
        space = json.loads(space)
    assert isinstance(space, dict)
    kind = space.get("type")
    if kind == "Dict":
        return Composite({k: space_to_spec(v) for k, v in space["subspaces"].items()})
    if kind == "Box":
        dtype = _DTYPES[space["dtype"]]
        low, high = torch.as_tensor(space["low"]), torch.as_tensor(space["high"])
        if bool(torch.isinf(low).all() and torch.isinf(high).all()):
            return Unbounded(shape=tuple(space["shape"]), dtype=dtype)
        return Bounded(low=low.to(dtype), high=high.to(dtype), shape=tuple(space["shape"]), dtype=dtype)
    if kind == "Discrete":
        return Categorical(int(space["n"]), shape=tuple(space.get("shape", ())), dtype=_DTYPES[space["dtype"]])
    if kind == "Text":
        return None
    raise ValueError(f"unsupported Minari space type {kind!r} (expected Box, Discrete, Dict or Text).")


class MinariExperienceReplay(BaseDatasetExperienceReplay):
    """A `Minari <https://minari.farama.org/>`_ dataset as a replay buffer, in TorchRL's TED layout.

    The dataset is read from Minari's local cache (``$MINARI_DATASETS_PATH``, else ``~/.minari/datasets``):
    ``<cache>/<dataset_id>/data/main_data.hdf5`` (one ``episode_<n>`` group per episode) and
    ``metadata.json``, as ``minari download <dataset_id>`` leaves them. Each step becomes one row:
    ``"observation"``/``("next", "observation")`` from the ``T + 1`` observations (likewise ``"info"``),
    ``"action"``, ``"episode"``, and ``("next", "reward" | "terminated" | "truncated" | "done")`` of shape
    ``[T, 1]``. The rows are memory-mapped once under ``<root>/<dataset_id>``; later loads read that copy.
    tdrl does not download: a dataset absent from the cache raises ``FileNotFoundError`` saying where to
    place it.

    Args:
        dataset_id: the Minari id, e.g. ``"mujoco/hopper/expert-v0"``.
        batch_size: the default sample size.
        root: where the memory-mapped copy goes (default ``~/.cache/tdrl/minari``).
        download: ``True``: build the copy from the Minari files when it is absent; ``"force"``: rebuild it;
            ``False``: only load an existing copy.
        sampler: the sampler (default :class:`~tdrl.data.RandomSampler`).
        writer: the writer (default :class:`~tdrl.data.ImmutableDatasetWriter`).
        collate_fn: merges samples.
        pin_memory: pin sampled batches.
        prefetch: batches prefetched in threads.
        transform: applied to sampled batches.
        split_trajs: store ``[n_episodes, T_max]`` padded trajectories (with ``"mask"`` and ``"traj_ids"``)
            under ``<root>/<dataset_id>_split``.
        load_from_local_minari: rebuild the copy from the Minari cache even when it exists.

    Examples:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     MinariExperienceReplay("D4RL/door/human-v2", 32, root=tmp, download=False)
        Traceback (most recent call last):
        ...
        FileNotFoundError: MinariExperienceReplay: dataset 'D4RL/door/human-v2' was not found ...
    """

    def __init__(
        self,
        dataset_id: str,
        batch_size: int,
        *,
        root: str | Path | None = None,
        download: bool | str = True,
        sampler: Sampler | None = None,
        writer: Writer | None = None,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        prefetch: int | None = None,
        transform: Any = None,
        split_trajs: bool = False,
        load_from_local_minari: bool = False,
    ) -> None:
        self.dataset_id = dataset_id
        self.root = _get_root_dir("minari") if root is None else root
        self.split_trajs = split_trajs
        self.download = download
        self.load_from_local_minari = load_from_local_minari
        if download == "force" or (download and not self._is_downloaded()) or load_from_local_minari:
            storage = self._build()
        elif not self._is_downloaded():
            raise self._missing(f"build it with download=True from {self._raw_dir()}.")
        else:
            self._load_metadata()
            if split_trajs and not self.data_path.exists():
                split = split_trajectories(TensorDict.load_memmap(self.data_path_root))
                storage = _memmap_storage(split, self.data_path)
            else:
                storage = _load_storage(self.data_path)
        super().__init__(
            storage=storage,
            sampler=sampler,
            writer=_default_writer(writer),
            collate_fn=collate_fn,
            pin_memory=pin_memory,
            prefetch=prefetch,
            batch_size=batch_size,
            transform=transform,
        )

    @property
    def data_path(self) -> Path:
        return self.root / (self.dataset_id + "_split") if self.split_trajs else self.data_path_root

    @property
    def data_path_root(self) -> Path:
        return self.root / self.dataset_id

    @property
    def metadata_path(self) -> Path:
        """The dataset's metadata (Minari's ``metadata.json``), kept beside the memory-mapped copy."""
        return self.data_path_root / "env_metadata.json"

    def _is_downloaded(self) -> bool:
        return self.data_path_root.exists()

    def _raw_dir(self) -> Path:
        return minari_datasets_path() / self.dataset_id / "data"

    def _missing(self, how: str) -> FileNotFoundError:
        return _missing_dataset(type(self).__name__, self.dataset_id, [self.data_path_root, self._raw_dir()], how)

    def _build(self) -> Any:
        raw = self._raw_dir()
        h5_path = raw / "main_data.hdf5"
        if not h5_path.exists():
            raise self._missing(
                f"place Minari's files at {h5_path} and {raw / 'metadata.json'} (`minari download "
                f"{self.dataset_id}` on a machine with network, then copy the folder), or point "
                "MINARI_DATASETS_PATH at the cache that holds them."
            )
        groups = read_file(h5_path, type(self).__name__)
        numbered = sorted((int(k.removeprefix("episode_")), k) for k in groups if k.startswith("episode_"))
        if not numbered:
            raise ValueError(f"{h5_path} holds no 'episode_<n>' group (keys: {sorted(groups)}).")
        data: TensorDict = torch.cat([_episode_td(groups[key], num) for num, key in numbered], 0)  # type: ignore[assignment]
        metadata_file = raw / "metadata.json"
        metadata = json.loads(metadata_file.read_text()) if metadata_file.exists() else {}
        storage = _memmap_storage(data, self.data_path_root)
        self.metadata_path.write_text(json.dumps(metadata))
        self._load_metadata()
        if self.split_trajs:
            storage = _memmap_storage(split_trajectories(data), self.data_path)
        return storage

    def _load_metadata(self) -> None:
        self.metadata: dict[str, Any] = (
            json.loads(self.metadata_path.read_text()) if self.metadata_path.exists() else {}
        )
        for key in ("observation_space", "action_space"):
            self.metadata[key] = space_to_spec(self.metadata.get(key))
