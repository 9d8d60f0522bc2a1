"""``AtariDQNExperienceReplay``: the DQN Replay dataset (Agarwal et al., 2020) read from local checkpoints."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data.datasets.common import (
    BaseDatasetExperienceReplay,
    _default_writer,
    _get_root_dir,
    _missing_dataset,
)
from tdrl.data.replay_buffers import (
    SamplerWithoutReplacement,
    SliceSampler,
    SliceSamplerWithoutReplacement,
    Storage,
)

__all__ = ["AtariDQNExperienceReplay"]

# "$store$_observation_ckpt.3.gz" (a transition array) or "add_count_ckpt.3.gz" (a replay-memory counter).
_FILE = re.compile(r"^(\$store\$_)?(.+)_ckpt\.(\d+)\.gz$")
_DATASET_ID = re.compile(r"^[A-Za-z]+/[1-5]$")


def _read_gz(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as file:
        return np.load(file, allow_pickle=False)


def _list_checkpoints(logs: Path) -> dict[int, dict[str, tuple[bool, Path]]]:
    found: dict[int, dict[str, tuple[bool, Path]]] = defaultdict(dict)
    for path in sorted(logs.glob("*.gz")):
        match = _FILE.match(path.name)
        if match is not None:
            found[int(match.group(3))][match.group(2)] = (match.group(1) is not None, path)
    return dict(sorted(found.items()))


def _process_checkpoint(files: dict[str, tuple[bool, Path]], dest: Path) -> dict[str, Any]:
    """Writes one checkpoint's arrays as memmaps; returns its counters (the non-``$store$`` files)."""
    for required in ("observation", "action", "reward", "terminal"):
        if required not in files or not files[required][0]:
            raise FileNotFoundError(f"the DQN replay checkpoint in {dest} lacks its '$store$_{required}' file.")
    counters: dict[str, Any] = {}
    data = TensorDict()
    for name, (stored, path) in files.items():
        array = _read_gz(path)
        if not stored:
            counters[name] = array.tolist()
            continue
        key: tuple[str, ...] = {"terminal": ("next", "terminated"), "reward": ("next", "reward")}.get(name, (name,))
        if name == "observation":
            # One extra (empty) frame so that row t + 1 is the next observation of row t.
            padded = np.zeros((array.shape[0] + 1, *array.shape[1:]), dtype=array.dtype)
            padded[:-1] = array
            array = padded
        data.set(key, torch.from_numpy(np.ascontiguousarray(array)))
    data.memmap(dest)
    return counters


class _DQNReplayStorage(Storage):
    """The checkpoints of one run, read as one storage; rows are laid out (TED) when they are read."""

    def __init__(self, path: Path, checkpoints: list[int], metadata: dict[str, Any]) -> None:
        self.path = Path(path)
        self.checkpoints = checkpoints
        self._tds = [TensorDict.load_memmap(self.path / str(c)) for c in checkpoints]
        lengths = torch.tensor([td.get("observation").shape[0] - 1 for td in self._tds])
        self._ends = lengths.cumsum(0)
        self._metadata = metadata
        terminated = torch.cat([td.get(("next", "terminated")).reshape(-1) for td in self._tds]).long()
        # The terminal step closes its episode (TorchRL's cumsum would open the next one with it).
        self.episodes = terminated.cumsum(0) - terminated
        super().__init__(max_size=int(self._ends[-1]))

    def __len__(self) -> int:
        return int(self._ends[-1])

    def _rows(self, td: TensorDictBase, index: torch.Tensor) -> TensorDictBase:
        observation = td.get("observation")
        terminated = td.get(("next", "terminated"))[index]
        next_obs = observation[index + 1].clone()
        next_obs[terminated.bool()] = 0  # the frame after a terminal step belongs to the next episode
        out: TensorDictBase = td.exclude("observation").apply(  # type: ignore[assignment]
            lambda x: x[index], batch_size=[index.numel()]
        )
        out.set("observation", observation[index])
        out.set(("next", "observation"), next_obs)
        zeros = torch.zeros_like(terminated)
        out.set(("next", "done"), terminated.clone())
        out.set(("next", "truncated"), zeros)
        for key in ("terminated", "done", "truncated"):
            out.set(key, zeros.clone())
        return out

    def get(self, index: Any) -> TensorDictBase:
        flat = torch.arange(len(self))[index] if not isinstance(index, torch.Tensor) else index
        scalar = flat.ndim == 0
        flat = flat.reshape(-1).long()
        if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= len(self)):
            raise IndexError(f"index out of range for a dataset of {len(self)} rows.")
        which = torch.searchsorted(self._ends, flat, right=True)
        starts = torch.cat([torch.zeros(1, dtype=torch.long), self._ends[:-1]])
        parts: list[TensorDictBase] = []
        order: list[torch.Tensor] = []
        for c in which.unique().tolist():
            mask = which == c
            parts.append(self._rows(self._tds[c], flat[mask] - starts[c]))
            order.append(mask.nonzero().squeeze(-1))
        out: TensorDictBase = torch.cat(parts, 0)[torch.argsort(torch.cat(order))]  # type: ignore[arg-type,assignment]
        out.set_non_tensor("metadata", self._metadata)
        return out[0] if scalar else out

    def set(self, cursor: Any, data: Any, *, set_cursor: bool = True) -> None:
        raise RuntimeError("the DQN replay dataset is read-only.")

    def _empty(self) -> None:
        raise RuntimeError("the DQN replay dataset is read-only.")

    def state_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "checkpoints": self.checkpoints}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if Path(state_dict["path"]) != self.path or list(state_dict["checkpoints"]) != self.checkpoints:
            raise ValueError(f"this state is of the dataset at {state_dict['path']}, not {self.path}.")


class AtariDQNExperienceReplay(BaseDatasetExperienceReplay):
    """The `DQN Replay dataset <https://research.google/resources/datasets/dqn-replay/>`_ of one Atari run.

    ``dataset_id`` is ``"<Game>/<run>"`` (run 1 to 5), e.g. ``"Pong/5"``. The raw checkpoints
    (``$store$_observation_ckpt.<n>.gz``, ``..._action_...``, ``..._reward_...``, ``..._terminal_...``, one
    gzipped ``.npy`` each) are read from ``<root>/dqn/<dataset_id>/replay_logs``, i.e. a copy of
    ``gs://atari-replay-datasets/dqn/<dataset_id>`` (tdrl does not download). Each checkpoint is
    memory-mapped once under ``<root>/<dataset_id>/<n>``; rows are formatted when sampled, with TorchRL's
    keys: ``"observation"``, ``"action"``, ``("next", "observation" | "reward" | "terminated" | "done" |
    "truncated")``, root ``"terminated"``/``"done"``/``"truncated"`` (zeros) and a ``"metadata"`` entry.

    Args:
        dataset_id: ``"<Game>/<run>"``.
        batch_size: the default sample size.
        root: where the raw files are looked for and the memmaps go (default ``~/.cache/tdrl/atari``).
        download: ``True``: process the raw checkpoints when no memmap is there; ``"force"``: reprocess;
            ``False``: only load.
        sampler: the sampler (default: random; slices with ``num_slices``/``slice_len``).
        writer: the writer (default :class:`~tdrl.data.ImmutableDatasetWriter`).
        transform: applied to sampled batches.
        num_procs: kept for TorchRL's signature; checkpoints are processed in this process.
        num_slices: sample this many episode slices per batch.
        slice_len: sample slices of this length.
        strict_len: drop episodes shorter than the slice length.
        replacement: sample with replacement.
        mp_start_method: kept for TorchRL's signature.
        **kwargs: passed to the replay buffer (``prefetch``, ``pin_memory``, ...).

    Examples:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     AtariDQNExperienceReplay("Pong/5", 32, root=tmp)
        Traceback (most recent call last):
        ...
        FileNotFoundError: AtariDQNExperienceReplay: dataset 'Pong/5' was not found ...
    """

    def __init__(
        self,
        dataset_id: str,
        batch_size: int | None = None,
        *,
        root: str | Path | None = None,
        download: bool | str = True,
        sampler: Any = None,
        writer: Any = None,
        transform: Any = None,
        num_procs: int = 0,
        num_slices: int | None = None,
        slice_len: int | None = None,
        strict_len: bool = True,
        replacement: bool = True,
        mp_start_method: str = "fork",
        **kwargs: Any,
    ) -> None:
        if not isinstance(dataset_id, str) or not _DATASET_ID.match(dataset_id):
            raise ValueError(f"dataset_id must read '<Game>/<run>' with a run from 1 to 5 (e.g. 'Pong/5'), got {dataset_id!r}.")
        self.dataset_id = dataset_id
        self.root = _get_root_dir("atari") if root is None else root
        self.num_procs = num_procs
        self.mp_start_method = mp_start_method
        if download == "force" or (download and not self._is_downloaded()):
            self._process()
        elif not self._is_downloaded():
            raise _missing_dataset(
                type(self).__name__, dataset_id, [self.data_path], "build it with download=True from the raw files."
            )
        info = json.loads((self.data_path / "processed.json").read_text())
        storage = _DQNReplayStorage(self.data_path, info["checkpoints"], {"dataset_id": dataset_id, **info["counters"]})
        if sampler is None and (num_slices is not None or slice_len is not None):
            episodes = storage.episodes
            if replacement:
                sampler = SliceSampler(num_slices=num_slices, slice_len=slice_len, strict_length=strict_len,
                                       trajectories=episodes, cache_values=True)
            else:
                sampler = SliceSamplerWithoutReplacement(num_slices=num_slices, slice_len=slice_len,
                                                         strict_length=strict_len, trajectories=episodes)
        elif sampler is None and not replacement:
            sampler = SamplerWithoutReplacement()
        super().__init__(storage=storage, batch_size=batch_size, writer=_default_writer(writer), sampler=sampler,
                         collate_fn=lambda x: x, transform=transform, **kwargs)

    @property
    def episodes(self) -> torch.Tensor:
        """The episode of each row (the terminal step included in its episode)."""
        return self._storage.episodes  # type: ignore[attr-defined]

    @property
    def data_path(self) -> Path:
        return self.root / self.dataset_id

    @property
    def data_path_root(self) -> Path:
        return self.data_path

    @property
    def raw_path(self) -> Path:
        """Where the raw ``replay_logs`` of the run are read from."""
        return self.root / "dqn" / self.dataset_id / "replay_logs"

    def _is_downloaded(self) -> bool:
        return (self.data_path / "processed.json").exists()

    def _process(self) -> None:
        checkpoints = _list_checkpoints(self.raw_path) if self.raw_path.is_dir() else {}
        if not checkpoints:
            raise _missing_dataset(
                type(self).__name__,
                self.dataset_id,
                [self.data_path, self.raw_path],
                f"copy the run's files there, e.g. `gsutil -m cp -R gs://atari-replay-datasets/dqn/{self.dataset_id} "
                f"{self.root / 'dqn' / self.dataset_id.split('/')[0]}` on a machine with network.",
            )
        if self.data_path.exists():
            shutil.rmtree(self.data_path)
        counters = {}
        for number, files in checkpoints.items():
            counters[str(number)] = _process_checkpoint(files, self.data_path / str(number))
        info = {"checkpoints": list(checkpoints), "counters": {"counters": counters} if any(counters.values()) else {}}
        (self.data_path / "processed.json").write_text(json.dumps(info))
