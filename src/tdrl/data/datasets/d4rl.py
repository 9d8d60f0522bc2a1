"""``D4RLExperienceReplay``: D4RL HDF5 files read from a local folder."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

__all__ = ["D4RLExperienceReplay"]


def _tree_to_td(tree: dict[str, Any], n: int) -> TensorDict:
    out = TensorDict({}, batch_size=[n])
    for key, value in tree.items():
        out.set(key, _tree_to_td(value, n) if isinstance(value, dict) else torch.from_numpy(value))
    return out


def _shift_down(x: torch.Tensor) -> torch.Tensor:
    """``x[t - 1]`` at row ``t``, zero (False) at row 0: the step's incoming reward/done at the root."""
    out = torch.zeros_like(x)
    out[1:] = x[:-1]
    return out


def d4rl_to_ted(raw: dict[str, Any], *, use_truncated_as_done: bool = True) -> tuple[TensorDict, dict[str, Any]]:
    """Turns the arrays of a D4RL file into TED rows and the file's ``metadata`` entries.

    Row ``t`` holds ``observations[t]``, ``actions[t]`` and, under ``"next"``, ``observations[t + 1]`` (or
    ``next_observations[t]``), ``rewards[t]``, ``terminals[t]`` (``"terminated"``), ``timeouts[t]``
    (``"truncated"``) and their ``"done"``; the last row of the file has no successor and is dropped. The
    ``("next", "observation")`` of done rows is zero (it belongs to the next episode), and the root
    ``"reward"``/``"done"``/... hold the previous row's values (zero on row 0), as TorchRL lays them out.
    """
    raw = dict(raw)
    metadata = raw.pop("metadata", {})
    for key in ("observations", "actions", "rewards", "terminals"):
        if key not in raw:
            raise KeyError(f"a D4RL file needs an {key!r} dataset; it has {sorted(raw)}.")
    n = int(raw["observations"].shape[0])
    td = _tree_to_td(raw, n)
    td.rename_key_("observations", "observation")
    td.rename_key_("actions", "action")
    td.rename_key_("rewards", "reward")
    td.rename_key_("terminals", "terminated")
    if "timeouts" in td.keys():
        td.rename_key_("timeouts", "truncated")
    if "infos" in td.keys():
        td.rename_key_("infos", "info")
    for flag in ("terminated", "truncated"):
        if flag in td.keys():
            td.set(flag, td.get(flag).bool().unsqueeze(-1))
    truncated = td.get("truncated", None) if use_truncated_as_done else None
    td.set("done", td.get("terminated") | truncated if truncated is not None else td.get("terminated").clone())
    td.set("reward", td.get("reward").unsqueeze(-1))
    successor = td[1:].select("info", strict=False)
    if "next_observations" in td.keys():
        next_obs = td.pop("next_observations")[:-1]
    else:
        next_obs = td.get("observation")[1:]
    td = td[:-1]
    successor.set("observation", next_obs)
    successor.update(td.select("reward", "done", "terminated", "truncated", strict=False))
    td.set("next", successor)
    td = td.clone()
    for key in ("reward", "done", "terminated", "truncated"):
        if key in td.keys():
            td.set(key, _shift_down(td.get(key)))
    td.get(("next", "observation"))[td.get(("next", "done")).squeeze(-1)] = 0
    return td, metadata


class D4RLExperienceReplay(BaseDatasetExperienceReplay):
    """A `D4RL <https://github.com/Farama-Foundation/D4RL>`_ dataset as a replay buffer, in TED layout.

    The raw file is D4RL's HDF5 (``observations``, ``actions``, ``rewards``, ``terminals``, ``timeouts``,
    optional ``next_observations``, ``infos/*`` and ``metadata/*``), read from ``<root>/<dataset_id>.hdf5``
    or ``$D4RL_DATASET_DIR/<dataset_id>.hdf5``. Rows follow :func:`d4rl_to_ted` (TorchRL's direct-download
    layout); ``metadata/*`` goes to :attr:`metadata`. The rows are memory-mapped once under
    ``<root>/<dataset_id>``. tdrl neither downloads nor runs the ``d4rl`` package: ``from_env=True`` or
    ``direct_download=False`` raise, and so do ``env_kwargs``.

    Args:
        dataset_id: the D4RL id, e.g. ``"hopper-medium-v2"``.
        batch_size: the default sample size.
        sampler: the sampler (default :class:`~tdrl.data.RandomSampler`).
        writer: the writer (default :class:`~tdrl.data.ImmutableDatasetWriter`).
        collate_fn: merges samples.
        pin_memory: pin sampled batches.
        prefetch: batches prefetched in threads.
        transform: applied to sampled batches.
        split_trajs: store ``[n_traj, T_max]`` padded trajectories (split on ``("next", "done")``), the last
            step of each marked done.
        from_env: read through ``d4rl``'s ``env.get_dataset()`` (not supported: the file is read directly).
        use_truncated_as_done: ``done = terminated | truncated`` (else ``done = terminated``).
        direct_download: must be ``None`` or ``True``: the file is read without ``d4rl``.
        terminate_on_end: must not be ``False`` (a ``d4rl.qlearning_dataset`` option).
        download: ``True``: build the copy from the raw file when absent; ``"force"``: rebuild it; ``False``:
            only load an existing copy.
        root: where the raw file is looked for and the copy goes (default ``~/.cache/tdrl/d4rl``).
        **env_kwargs: ``d4rl.qlearning_dataset`` options (not supported).

    Examples:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     D4RLExperienceReplay("hopper-medium-v2", 32, root=tmp)
        Traceback (most recent call last):
        ...
        FileNotFoundError: D4RLExperienceReplay: dataset 'hopper-medium-v2' was not found ...
    """

    def __init__(
        self,
        dataset_id: str,
        batch_size: int,
        sampler: Sampler | None = None,
        writer: Writer | None = None,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        prefetch: int | None = None,
        transform: Any = None,
        split_trajs: bool = False,
        from_env: bool = False,
        use_truncated_as_done: bool = True,
        direct_download: bool | None = None,
        terminate_on_end: bool | None = None,
        download: bool | str = True,
        root: str | Path | None = None,
        **env_kwargs: Any,
    ) -> None:
        self.dataset_id = dataset_id
        self.root = _get_root_dir("d4rl") if root is None else root
        self.use_truncated_as_done = use_truncated_as_done
        self.from_env = from_env
        if from_env or direct_download is False or env_kwargs:
            raise ValueError(
                "D4RLExperienceReplay reads D4RL's HDF5 file directly: from_env=True, direct_download=False "
                f"and d4rl.qlearning_dataset options ({sorted(env_kwargs)}) need the d4rl package, which tdrl "
                "does not use."
            )
        if terminate_on_end is False:
            raise ValueError("terminate_on_end=False is not compatible with reading the D4RL file directly.")
        self.metadata: dict[str, Any] = {}
        self.specs = None
        if download == "force" or (download and not self._is_downloaded()):
            storage = self._build(split_trajs)
        elif self._is_downloaded():
            storage = _load_storage(self.data_path)
        else:
            raise _missing_dataset(
                type(self).__name__, dataset_id, [self.data_path], "build it with download=True from the raw file."
            )
        super().__init__(
            batch_size=batch_size,
            storage=storage,
            sampler=sampler,
            writer=_default_writer(writer),
            collate_fn=collate_fn,
            pin_memory=pin_memory,
            prefetch=prefetch,
            transform=transform,
        )

    @property
    def data_path(self) -> Path:
        return self.root / self.dataset_id

    @property
    def data_path_root(self) -> Path:
        return self.data_path

    def _is_downloaded(self) -> bool:
        return self.data_path.exists()

    def _raw_candidates(self) -> list[Path]:
        places = [self.root / f"{self.dataset_id}.hdf5"]
        if os.environ.get("D4RL_DATASET_DIR"):
            places.append(Path(os.environ["D4RL_DATASET_DIR"]) / f"{self.dataset_id}.hdf5")
        return places

    def _build(self, split_trajs: bool) -> Any:
        places = self._raw_candidates()
        found = next((p for p in places if p.exists()), None)
        if found is None:
            raise _missing_dataset(
                type(self).__name__,
                self.dataset_id,
                places,
                f"save D4RL's HDF5 file for {self.dataset_id!r} as {places[0]} (or in $D4RL_DATASET_DIR).",
            )
        data, self.metadata = d4rl_to_ted(
            read_file(found, type(self).__name__), use_truncated_as_done=self.use_truncated_as_done
        )
        if split_trajs:
            data = split_trajectories(data)
            data.get(("next", "done"))[:, -1] = True
        return _memmap_storage(data, self.data_path)
