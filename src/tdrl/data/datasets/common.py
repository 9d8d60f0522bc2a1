"""``BaseDatasetExperienceReplay``: the replay buffer every offline dataset subclasses."""

from __future__ import annotations

import abc
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cloudpickle
import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data.replay_buffers import ImmutableDatasetWriter, TensorDictReplayBuffer, TensorStorage

__all__ = ["BaseDatasetExperienceReplay"]


def _get_root_dir(dataset: str) -> str:
    """The default root of a dataset family: ``~/.cache/tdrl/<dataset>``."""
    return os.path.join(os.path.expanduser("~"), ".cache", "tdrl", dataset)


def _missing_dataset(cls_name: str, dataset_id: str, looked_in: Sequence[Path | str], how: str) -> FileNotFoundError:
    """The error of a dataset whose files are absent: tdrl never downloads at run time."""
    places = ", ".join(str(p) for p in looked_in)
    return FileNotFoundError(
        f"{cls_name}: dataset {dataset_id!r} was not found (looked in: {places}). tdrl reads local files "
        f"only and does not download at run time; {how}"
    )


class _PickledFn:
    """Carries a lambda or closure to worker processes with cloudpickle."""

    def __init__(self, fn: Callable) -> None:
        try:
            self._payload = cloudpickle.dumps(fn)
        except Exception as err:
            raise TypeError(f"preprocess: fn cannot be sent to worker processes ({err}).") from err
        self._fn: Callable | None = fn

    def __getstate__(self) -> dict[str, Any]:
        return {"_payload": self._payload, "_fn": None}

    def __call__(self, *args: Any) -> Any:
        if self._fn is None:
            self._fn = cloudpickle.loads(self._payload)
        return self._fn(*args)


class BaseDatasetExperienceReplay(TensorDictReplayBuffer):
    """The parent of the offline datasets: a read-only :class:`~tdrl.data.TensorDictReplayBuffer` on disk.

    A subclass turns the dataset's own files into a memory-mapped TensorDict (TorchRL's TED layout:
    ``"observation"``, ``"action"``, ``("next", "observation")``, ``("next", "reward")``,
    ``("next", "done")``, ...) under :attr:`data_path` and tells :meth:`_is_downloaded` whether it is there.
    The default writer is :class:`~tdrl.data.ImmutableDatasetWriter`: ``extend`` raises.

    Examples:
        >>> import tempfile, torch
        >>> from pathlib import Path
        >>> from tensordict import TensorDict
        >>> class Squares(BaseDatasetExperienceReplay):
        ...     def __init__(self, root, batch_size):
        ...         self.root = root
        ...         data = TensorDict({"x": torch.arange(4.0) ** 2}, [4]).memmap(self.data_path)
        ...         super().__init__(storage=TensorStorage(data), batch_size=batch_size,
        ...                          writer=ImmutableDatasetWriter())
        ...     data_path = data_path_root = property(lambda self: self.root / "squares")
        ...     def _is_downloaded(self):
        ...         return self.data_path.exists()
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     ds = Squares(tmp, batch_size=2)
        ...     out = ds.preprocess(lambda td: td.set("y", td["x"] + 1), num_workers=0, dest=Path(tmp) / "out")
        ...     print(ds.sample().shape, out[3]["y"].item(), ds.root.name == Path(tmp).name)
        torch.Size([2]) 10.0 True
    """

    @property
    @abc.abstractmethod
    def data_path(self) -> Path:
        """The folder of the processed dataset (with its split, if any)."""

    @property
    @abc.abstractmethod
    def data_path_root(self) -> Path:
        """The folder of the processed dataset, before any split."""

    @abc.abstractmethod
    def _is_downloaded(self) -> bool:
        """Whether the processed dataset is on disk."""

    @property
    def root(self) -> Path:
        """The folder that holds the processed datasets of this family."""
        return self._root

    @root.setter
    def root(self, value: str | Path) -> None:
        self._root = Path(value)

    def preprocess(
        self,
        fn: Callable[[TensorDictBase], TensorDictBase],
        dim: int = 0,
        num_workers: int | None = None,
        *,
        chunksize: int | None = None,
        num_chunks: int | None = None,
        pool: Any = None,
        generator: torch.Generator | None = None,
        max_tasks_per_child: int | None = None,
        worker_threads: int = 1,
        index_with_generator: bool = False,
        pbar: bool = False,
        mp_start_method: str | None = None,
        num_frames: int | None = None,
        dest: str | Path,
    ) -> TensorStorage:
        """Maps ``fn`` over the dataset into a new memory-mapped storage at ``dest``.

        ``fn`` receives slices of the stored TensorDict (one item when probing the output layout) and returns
        the transformed slice. The work goes through :meth:`tensordict.TensorDictBase.map` (worker processes;
        a lambda travels with cloudpickle); ``num_workers=0`` runs it in this process, in chunks of
        ``chunksize`` items (1024 by default).

        Args:
            fn: the transform of a slice of the dataset.
            dim: the dimension mapped along.
            num_workers: worker processes (``None``: one per CPU; ``0``: none).
            chunksize: items per call of ``fn``.
            num_chunks: number of chunks (instead of ``chunksize``).
            pool: a multiprocessing pool to use.
            generator: seeds the workers.
            max_tasks_per_child: tasks per worker before it is replaced.
            worker_threads: torch threads per worker.
            index_with_generator: index the chunks with ``generator``.
            pbar: show a progress bar.
            mp_start_method: the multiprocessing start method.
            num_frames: transform only the first ``num_frames`` items (to try a transform).
            dest: the folder of the new storage.

        Returns:
            A :class:`~tdrl.data.TensorStorage` of the transformed data, for a new replay buffer.
        """
        storage = self._storage
        if not isinstance(storage, TensorStorage) or not isinstance(storage._storage, TensorDictBase):
            raise RuntimeError(
                f"preprocess needs a TensorStorage of a TensorDict, got {type(storage).__name__}; "
                "map the data yourself for other storages."
            )
        data: TensorDictBase = storage._storage
        total = data.shape[0]
        num_frames = total if num_frames is None else int(num_frames)
        if not 0 < num_frames <= total:
            raise ValueError(f"num_frames must be in [1, {total}], got {num_frames}.")
        data = data[:num_frames] if num_frames != total else data
        with data.unlock_():
            example = fn(data[:1].clone())
        out = example[0].expand(num_frames, *example.shape[1:]).memmap_like(dest)
        if num_workers == 0:
            _map_in_process(data, fn, out, chunksize, num_chunks)
            return TensorStorage(out)
        with data.unlock_():
            data.map(
                fn=_PickledFn(fn),
                dim=dim,
                num_workers=num_workers,
                chunksize=chunksize,
                num_chunks=num_chunks,
                pool=pool,
                generator=generator,
                max_tasks_per_child=max_tasks_per_child,
                worker_threads=worker_threads,
                index_with_generator=index_with_generator,
                pbar=pbar,
                mp_start_method=mp_start_method,
                out=out,
            )
        return TensorStorage(out)

    def delete(self) -> None:
        """Deletes the processed dataset (:attr:`data_path`) from disk."""
        shutil.rmtree(self.data_path)


def _map_in_process(
    data: TensorDictBase, fn: Callable, out: TensorDictBase, chunksize: int | None, num_chunks: int | None
) -> None:
    total = data.shape[0]
    step = int(chunksize or 1024) if num_chunks is None else -(-total // int(num_chunks))
    for start in range(0, total, step):
        stop = min(start + step, total)
        out[start:stop].update_(fn(data[start:stop].clone()))


def _memmap_storage(data: TensorDictBase, path: Path) -> TensorStorage:
    """Writes ``data`` as a memory-mapped TensorDict at ``path`` (atomically) and wraps it in a storage."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    data.memmap(tmp)
    if path.exists():
        shutil.rmtree(path)
    tmp.rename(path)
    return TensorStorage(TensorDict.load_memmap(path))


def _load_storage(path: Path) -> TensorStorage:
    return TensorStorage(TensorDict.load_memmap(path))


def _default_writer(writer: Any) -> Any:
    return ImmutableDatasetWriter() if writer is None else writer
