"""The logger interface shared by every backend (TorchRL's ``Logger``)."""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping, Sequence
from typing import Any

from torch import Tensor

__all__ = ["Logger"]


class Logger(abc.ABC):
    """Base class of the loggers: scalars, videos, hyper-parameters and histograms under one experiment.

    Subclasses create their backend object in :meth:`_create_experiment` and implement the ``log_*``
    methods. ``state_dict``/``load_state_dict`` carry the counters a resumed run needs.

    Args:
        exp_name: the experiment's name.
        log_dir: the folder that holds the experiment.

    Examples:
        >>> import tempfile
        >>> from tdrl.record import CSVLogger
        >>> logger: Logger = CSVLogger("exp", log_dir=tempfile.mkdtemp())
        >>> logger.log_scalar("reward", 1.0, step=0)
        >>> logger.exp_name
        'exp'
    """

    def __init__(self, exp_name: str, log_dir: str | None) -> None:
        self.exp_name = exp_name
        self.log_dir = log_dir
        self._closed = False
        self.experiment = self._create_experiment()

    @abc.abstractmethod
    def _create_experiment(self) -> Any:
        """Builds the backend object (a writer, a run, ...)."""

    @abc.abstractmethod
    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Logs one scalar value at ``step``."""

    @abc.abstractmethod
    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs: Any) -> None:
        """Logs a video tensor of shape ``(T, C, H, W)`` or ``(N, T, C, H, W)``."""

    @abc.abstractmethod
    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Logs the run's hyper-parameters (a dict or an OmegaConf config)."""

    @abc.abstractmethod
    def log_histogram(self, name: str, data: Sequence | Tensor, **kwargs: Any) -> None:
        """Logs a histogram of ``data``."""

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        """Logs several scalars at the same step."""
        for name, value in metrics.items():
            self.log_scalar(name, value, step=step)

    def flush(self) -> None:
        """Writes buffered data to disk (or to the backend)."""
        flush = getattr(self.experiment, "flush", None)
        if callable(flush):
            flush()

    def close(self) -> None:
        """Flushes and closes the backend; idempotent."""
        if self._closed:
            return
        self.flush()
        for name in ("finish", "close"):
            fn = getattr(self.experiment, name, None)
            if callable(fn):
                fn()
                break
        self._closed = True

    shutdown = close

    @property
    def is_alive(self) -> bool:
        """False once :meth:`close` ran."""
        return not self._closed

    def state_dict(self) -> dict[str, Any]:
        """Names and counters needed to continue logging after a restart (plain data, no objects)."""
        self.flush()
        state: dict[str, Any] = {
            "exp_name": self.exp_name,
            "log_dir": None if self.log_dir is None else os.path.abspath(self.log_dir),
        }
        local = self._checkpoint_state()
        if local:
            state["local"] = local
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores the counters saved by :meth:`state_dict`."""
        self._load_checkpoint_state(state_dict.get("local", {}))

    def _checkpoint_state(self) -> dict[str, Any]:
        return {}

    def _load_checkpoint_state(self, state_dict: Mapping[str, Any]) -> None:
        del state_dict

    def __repr__(self) -> str:
        return f"{type(self).__name__}(exp_name={self.exp_name!r}, log_dir={self.log_dir!r})"
