"""MLflow logger (the ``mlflow`` extra: ``mlflow-skinny`` is enough); a ``file://`` or ``sqlite://`` tracking URI
needs no server."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import torch
from tensordict import TensorDictBase
from torch import Tensor

from tdrl.record.loggers.common import Logger
from tdrl.record.loggers.csv import _to_plain
from tdrl.record.loggers.video import encode_gif

# Imported on first use: mlflow's import takes seconds, and most runs of tdrl.record never log to it.
_HAS_MLFLOW = importlib.util.find_spec("mlflow") is not None


def _client(tracking_uri: str) -> Any:
    if not _HAS_MLFLOW:
        raise ImportError("MLFlowLogger needs the mlflow package: pip install 'tdrl[mlflow]' (or mlflow-skinny)")
    return importlib.import_module("mlflow.tracking").MlflowClient(tracking_uri=tracking_uri)

__all__ = ["MLFlowLogger"]


def _plain_metrics(metrics: Mapping[str, Any] | TensorDictBase, keys_sep: str) -> dict[str, float]:
    if isinstance(metrics, TensorDictBase):
        metrics = {keys_sep.join((k,) if isinstance(k, str) else k): v for k, v in metrics.items(True, True)}
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, Tensor):
            if value.numel() != 1:
                raise ValueError(f"MLFlowLogger: metric {key!r} must be a scalar, got shape {tuple(value.shape)}")
            value = value.item()
        out[str(key)] = float(value)
    return out


class MLFlowLogger(Logger):
    """Logs scalars, hyper-parameters, videos (GIF artifacts) and histograms (JSON artifacts) to an MLflow run.

    The logger talks to its own run through an ``MlflowClient``, so several loggers in one process (or a
    user's own ``mlflow.start_run``) do not share MLflow's global active run.

    Args:
        exp_name: the MLflow experiment (created when it does not exist).
        tracking_uri: the tracking store, e.g. ``file:///tmp/mlruns`` or ``sqlite:///mlflow.db``.
        tags: tags of a newly created experiment.

    Keyword Args:
        artifact_location: where artifacts go; a ``file:`` tracking URI is used for it by default.
        video_fps: frame rate of logged videos.
        **kwargs: ``run_name`` and ``run_id`` (continue an existing run).

    Raises:
        ImportError: when mlflow is not installed (``pip install "tdrl[mlflow]"``).

    Examples:
        >>> import tempfile, pathlib
        >>> uri = pathlib.Path(tempfile.mkdtemp()).as_uri()
        >>> logger = MLFlowLogger("demo", tracking_uri=uri)  # doctest: +SKIP
        >>> logger.log_scalar("loss", 0.5, step=1)  # doctest: +SKIP
    """

    def __init__(
        self,
        exp_name: str,
        tracking_uri: str,
        tags: dict[str, Any] | None = None,
        *,
        artifact_location: str | None = None,
        video_fps: int = 30,
        **kwargs: Any,
    ) -> None:
        unknown = set(kwargs) - {"run_name", "run_id"}
        if unknown:
            raise TypeError(f"MLFlowLogger: unexpected keyword arguments {sorted(unknown)}")
        if tracking_uri.startswith("file:"):
            # MLflow >= 3.10 refuses file stores unless told otherwise; get_logger("mlflow") builds a file URI
            # (as TorchRL's does), so opt in for file URIs only (docs/differences.md).
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
            if artifact_location is None:
                artifact_location = tracking_uri
        self.tracking_uri = tracking_uri
        self._mlflow_kwargs = {"name": exp_name, "artifact_location": artifact_location, "tags": tags}
        self._run_name = kwargs.get("run_name")
        self._run_id = kwargs.get("run_id")
        self.client = _client(tracking_uri)
        self.video_fps = video_fps
        self.video_log_counter = 0
        self.id: str | None = None
        # A file store's folder is the log_dir (what get_logger's resume turns back into the same URI).
        log_dir = url2pathname(urlparse(tracking_uri).path) if tracking_uri.startswith("file:") else tracking_uri
        super().__init__(exp_name=exp_name, log_dir=log_dir)

    def _create_experiment(self) -> Any:
        if self._run_id is not None:
            run = self.client.get_run(self._run_id)
            self.id = run.info.experiment_id
            return run
        found = self.client.get_experiment_by_name(self.exp_name)
        self.id = found.experiment_id if found is not None else self.client.create_experiment(
            self._mlflow_kwargs["name"],
            artifact_location=self._mlflow_kwargs["artifact_location"],
            tags=self._mlflow_kwargs["tags"],
        )
        return self.client.create_run(self.id, run_name=self._run_name)

    @property
    def run_id(self) -> str:
        """The id of the MLflow run this logger writes to."""
        return self.experiment.info.run_id

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        self.client.log_metric(self.run_id, name, float(value), step=step)

    def log_metrics(  # type: ignore[override]  # TorchRL's signature: TensorDict input, keys_sep, returns the values
        self,
        metrics: Mapping[str, Any] | TensorDictBase,
        step: int | None = None,
        *,
        keys_sep: str = "/",
    ) -> dict[str, float]:
        """Logs several scalars (tensors, floats, or a TensorDict flattened with ``keys_sep``) at one step."""
        plain = _plain_metrics(metrics, keys_sep)
        for name, value in plain.items():
            self.client.log_metric(self.run_id, name, value, step=step)
        return plain

    def _log_file(self, folder: str, filename: str, data: bytes) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, filename)
            with open(path, "wb") as fd:
                fd.write(data)
            self.client.log_artifact(self.run_id, path, folder)

    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs: Any) -> None:
        """Logs a ``(T, C, H, W)`` (or ``(N, T, C, H, W)``: the last) video as a GIF under ``videos/``."""
        # GIF through Pillow (TorchRL writes MP4 through torchcodec, an extra dependency).
        data, _ = encode_gif(video, fps=int(kwargs.get("fps", self.video_fps)))
        self.video_log_counter += 1
        suffix = f"_step_{step:04}" if step else ""
        self._log_file("videos", f"{name.replace('/', '_')}{suffix}.gif", data)

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Logs a dict or OmegaConf config as run parameters (values stringified by MLflow)."""
        for key, value in _to_plain(cfg).items():
            self.client.log_param(self.run_id, str(key), value)

    def log_histogram(self, name: str, data: Sequence | Tensor, **kwargs: Any) -> None:
        """Logs a histogram (``bins``, default 64) as JSON counts and edges under ``histograms/``.

        MLflow has no histogram type; TorchRL raises here, tdrl stores the counts as an artifact.
        """
        values = torch.as_tensor(data).detach().flatten().to(torch.float64).cpu()
        counts, edges = torch.histogram(values, bins=int(kwargs.get("bins", 64)))
        step = kwargs.get("step")
        payload = {"name": name, "step": step, "counts": counts.tolist(), "edges": edges.tolist()}
        suffix = f"_step_{step:04}" if step is not None else ""
        self._log_file("histograms", f"{name.replace('/', '_')}{suffix}.json", json.dumps(payload).encode())

    def flush(self) -> None:
        """MLflow's client writes each call through; nothing is buffered."""

    def close(self) -> None:
        """Marks the run finished; idempotent."""
        if not self._closed:
            self.client.set_terminated(self.run_id)
            self._closed = True

    shutdown = close

    def state_dict(self) -> dict[str, Any]:
        """Names, the run id and counters (``log_dir`` is the store's folder, or the URI of a non-file store)."""
        state = super().state_dict()
        if not self.tracking_uri.startswith("file:"):
            state["log_dir"] = self.tracking_uri
        return state

    def _checkpoint_state(self) -> dict[str, Any]:
        return {"id": self.id, "run_id": self.run_id, "video_log_counter": self.video_log_counter}

    def _load_checkpoint_state(self, state_dict: Mapping[str, Any]) -> None:
        self.id = state_dict.get("id", self.id)
        self.video_log_counter = int(state_dict.get("video_log_counter", self.video_log_counter))
        run_id = state_dict.get("run_id")
        if run_id is not None and run_id != self.run_id:
            # Continue the saved run instead of the fresh one the constructor opened.
            self.client.delete_run(self.run_id)
            self.experiment = self.client.get_run(run_id)
            self.client.update_run(run_id, status="RUNNING")

    def __repr__(self) -> str:
        return f"MLFlowLogger(exp_name={self.exp_name!r}, tracking_uri={self.tracking_uri!r}, run_id={self.run_id!r})"
