"""CSV logger: one ``scalars/<name>.csv`` file (``step,value`` lines) per scalar, flushed on every write.

The CSV files are the data: a checkpoint holds only, per scalar, the number of rows and the byte size of its
file (O(1) in the number of logged points). Restoring that state truncates each file back to that size, so
rows logged after the checkpoint of a killed run are dropped and the resumed run writes each step once.
"""

from __future__ import annotations

import json
import os
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from omegaconf import DictConfig, ListConfig, OmegaConf
from tensordict import MemoryMappedTensor
from torch import Tensor

from tdrl.record.loggers.common import Logger
from tdrl.record.loggers.video import write_mp4

__all__ = ["CSVExperiment", "CSVLogger", "read_scalars"]

VideoFormat = Literal["pt", "memmap", "mp4"]


def _to_plain(obj: Any) -> Any:
    """Turns OmegaConf containers and other mappings into JSON-serialisable data."""
    if isinstance(obj, (DictConfig, ListConfig)):
        return OmegaConf.to_container(obj, resolve=True)
    if isinstance(obj, Mapping):
        return {str(k): _to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_plain(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return repr(obj)


class CSVExperiment:
    """The files behind a :class:`CSVLogger`.

    Args:
        log_dir: the experiment folder; ``scalars/``, ``videos/`` and ``texts/`` are created in it.
        video_format: ``"pt"`` (``torch.save``), ``"memmap"`` or ``"mp4"`` (H.264 through PyAV, extra ``video``).
        video_fps: frame rate of the MP4 files.

    Examples:
        >>> import os, tempfile
        >>> exp = CSVExperiment(tempfile.mkdtemp())
        >>> exp.add_scalar("loss", 0.25, global_step=3)
        >>> sorted(os.listdir(exp.log_dir))
        ['scalars', 'texts', 'videos']
    """

    def __init__(self, log_dir: str, *, video_format: VideoFormat = "pt", video_fps: int = 30) -> None:
        if video_format not in ("pt", "memmap", "mp4"):
            raise ValueError(f"video_format must be 'pt', 'memmap' or 'mp4', got {video_format!r}")
        self.log_dir = log_dir
        self.video_format = video_format
        self.video_fps = video_fps
        self.scalars: dict[str, list[tuple[int, float]]] = defaultdict(list)
        self.videos_counter: dict[str, int] = defaultdict(int)
        self.text_counter: dict[str, int] = defaultdict(int)
        self._files: dict[str, Any] = {}
        self._counts: dict[str, int] = defaultdict(int)
        for sub in ("scalars", "videos", "texts"):
            os.makedirs(os.path.join(log_dir, sub), exist_ok=True)

    def _path(self, name: str) -> Path:
        return Path(self.log_dir, "scalars", f"{name}.csv")

    def _file(self, name: str) -> Any:
        fd = self._files.get(name)
        if fd is None:
            path = self._path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = self._files[name] = open(path, "a")  # noqa: SIM115 - kept open for the run
        return fd

    def add_scalar(self, name: str, value: float | None, global_step: int | None = None) -> None:
        if value is None:
            # No value yet (e.g. tqdm's rate before its second update, logged by TorchRL's sota scripts): W&B
            # records a gap, so the CSV file gets no line rather than an error.
            return
        if global_step is None:
            global_step = self._counts[name]
        value = float(value)
        self._counts[name] += 1
        self.scalars[name].append((int(global_step), value))
        fd = self._file(name)
        # One complete line per write, flushed at once: a crash never leaves more than that line behind.
        fd.write(f"{int(global_step)},{value!r}\n")
        fd.flush()

    def add_video(self, tag: str, video: Tensor, global_step: int | None = None, **kwargs: Any) -> Path:
        step = self.videos_counter[tag] if global_step is None else int(global_step)
        self.videos_counter[tag] += 1
        stem = Path(self.log_dir, "videos", f"video_{tag.replace('/', '_')}_{step}")
        if self.video_format == "pt":
            path = stem.with_suffix(".pt")
            torch.save(video.detach().cpu(), path)
        elif self.video_format == "mp4":
            path = stem.with_suffix(".mp4")
            # Other keywords (a W&B caption, a TensorBoard tag) mean nothing to an MP4 file.
            opts = {k: kwargs[k] for k in ("video_codec", "options") if k in kwargs}
            write_mp4(path, video, fps=int(kwargs.get("fps", self.video_fps)), **opts)
        else:
            path = stem.with_suffix(".memmap")
            MemoryMappedTensor.from_tensor(video.detach().cpu(), filename=path)
        return path

    def add_text(self, tag: str, text: str, global_step: int | None = None) -> Path:
        step = self.text_counter[tag] if global_step is None else int(global_step)
        self.text_counter[tag] += 1
        path = Path(self.log_dir, "texts", f"{tag.replace('/', '_')}_{step}.txt")
        path.write_text(text)
        return path

    def flush(self) -> None:
        for fd in self._files.values():
            fd.flush()

    def file_state(self) -> dict[str, Any]:
        """Per scalar, the rows written and the byte size of its file (flushed first)."""
        self.flush()
        sizes = {}
        for name in self._counts:
            path = self._path(name)
            sizes[name] = path.stat().st_size if path.exists() else 0
        return {"rows": dict(self._counts), "bytes": sizes}

    def restore_files(self, state: Mapping[str, Any]) -> None:
        """Truncates every scalar file to the size recorded by :meth:`file_state`.

        Files of scalars first logged after that state are removed; ``scalars`` is re-read from the files.
        """
        self.close()
        sizes = {str(k): int(v) for k, v in state.get("bytes", {}).items()}
        root = Path(self.log_dir, "scalars")
        for path in root.rglob("*.csv"):
            name = str(path.relative_to(root).with_suffix(""))
            if name not in sizes:
                path.unlink()
            elif path.stat().st_size > sizes[name]:
                with open(path, "r+b") as fd:
                    fd.truncate(sizes[name])
                    fd.flush()
                    os.fsync(fd.fileno())
        for name, size in sizes.items():
            path = self._path(name)
            found = path.stat().st_size if path.exists() else 0
            if found < size:
                warnings.warn(f"{path} holds {found} bytes, fewer than the {size} recorded in the checkpoint: "
                              "rows were removed since it was written", UserWarning, stacklevel=2)
        self._counts = defaultdict(int, {str(k): int(v) for k, v in state.get("rows", {}).items()})
        self.scalars = defaultdict(list, read_scalars(self.log_dir))

    def close(self) -> None:
        for fd in self._files.values():
            fd.close()
        self._files.clear()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class CSVLogger(Logger):
    """Logs scalars to CSV files under ``<log_dir>/<exp_name>/scalars/``.

    Args:
        exp_name: the experiment's name (its folder under ``log_dir``).
        log_dir: defaults to ``"csv_logs"``.
        video_format: ``"pt"``, ``"memmap"`` or ``"mp4"`` (PyAV, extra ``video``).
        video_fps: frame rate of the MP4 files.

    Examples:
        >>> import tempfile
        >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp())
        >>> logger.log_scalar("reward", 1.5, step=10)
        >>> read_scalars(logger.experiment.log_dir)["reward"]
        [(10, 1.5)]
    """

    experiment: CSVExperiment

    def __init__(
        self, exp_name: str, log_dir: str | None = None, video_format: VideoFormat = "pt", video_fps: int = 30
    ) -> None:
        self.video_format = video_format
        self.video_fps = video_fps
        super().__init__(exp_name=exp_name, log_dir="csv_logs" if log_dir is None else str(log_dir))

    def _create_experiment(self) -> CSVExperiment:
        return CSVExperiment(
            os.path.join(self.log_dir, self.exp_name), video_format=self.video_format, video_fps=self.video_fps
        )

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        self.experiment.add_scalar(name, value, global_step=step)

    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs: Any) -> None:
        if video.ndim not in (4, 5) or video.shape[-3] not in (1, 3):
            raise ValueError(
                f"log_video({name!r}) expects a (T, C, H, W) or (N, T, C, H, W) tensor with C in (1, 3), "
                f"got shape {tuple(video.shape)}"
            )
        self.experiment.add_video(name, video, global_step=step, **kwargs)

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        path = Path(self.experiment.log_dir, "hparams.json")
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(_to_plain(cfg), indent=2, sort_keys=True))
        os.replace(tmp, path)

    def log_histogram(self, name: str, data: Sequence | Tensor, **kwargs: Any) -> None:
        values = torch.as_tensor(data, dtype=torch.float64).flatten()
        bins = int(kwargs.get("bins", 10))
        counts = torch.histc(values, bins=bins)
        self.experiment.add_text(f"histogram_{name}", ",".join(str(int(c)) for c in counts), kwargs.get("step"))

    def log_str(self, name: str, value: str, step: int | None = None) -> None:
        self.experiment.add_text(name, value, global_step=step)

    def _checkpoint_state(self) -> dict[str, Any]:
        # O(1) in the number of logged points: the CSV files hold the data, the checkpoint their sizes.
        return {
            "files": self.experiment.file_state(),
            "videos_counter": dict(self.experiment.videos_counter),
            "text_counter": dict(self.experiment.text_counter),
        }

    def _load_checkpoint_state(self, state_dict: Mapping[str, Any]) -> None:
        if "files" in state_dict:
            self.experiment.restore_files(state_dict["files"])
        else:  # an older checkpoint that kept every point: its files cannot be truncated, only counted
            self.experiment._counts.update({k: len(v) for k, v in state_dict.get("scalars", {}).items()})
        for name in ("videos_counter", "text_counter"):
            target = getattr(self.experiment, name)
            target.clear()
            target.update(state_dict.get(name, {}))


def read_scalars(log_dir: str | os.PathLike) -> dict[str, list[tuple[int, float]]]:
    """Reads every ``scalars/*.csv`` of a CSV experiment folder into ``{name: [(step, value), ...]}``.

    A torn last line (a crash in the middle of a write) is skipped, so logs stay readable after a crash.

    Examples:
        >>> import tempfile
        >>> from tdrl.record import CSVLogger
        >>> logger = CSVLogger("run", log_dir=tempfile.mkdtemp())
        >>> for step in (0, 10):
        ...     logger.log_scalar("return", float(step), step=step)
        >>> read_scalars(logger.experiment.log_dir)
        {'return': [(0, 0.0), (10, 10.0)]}
    """
    root = Path(log_dir, "scalars")
    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(root.rglob("*.csv")):
        rows = []
        for line in path.read_text().splitlines():
            parts = line.split(",")
            if len(parts) != 2:
                continue
            try:
                rows.append((int(parts[0]), float(parts[1])))
            except ValueError:
                continue
        out[str(path.relative_to(root).with_suffix(""))] = rows
    return out
