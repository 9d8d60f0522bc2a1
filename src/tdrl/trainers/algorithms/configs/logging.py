"""Configs for loggers (group ``logger``: ``base``, ``csv``, ``tensorboard``, ``wandb``).

The factories take TorchRL's config fields. ``service_backend`` (TorchRL can run a logger in a helper
process or a Ray actor) only accepts ``"direct"`` here: tdrl loggers write from the trainer's process.
``video_fps`` is the frame rate videos are logged with when ``log_video`` is called without ``fps``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal, TypeVar

from omegaconf import MISSING

from tdrl.record import CSVLogger, Logger, TensorboardLogger, WandbLogger
from tdrl.record.loggers.wandb import wandb
from tdrl.trainers.algorithms.configs.common import ConfigBase

__all__ = [
    "CSVLoggerConfig", "LoggerConfig", "TensorboardLoggerConfig", "WandbLoggerConfig", "make_csv_logger",
    "make_tensorboard_logger", "make_wandb_logger",
]


def _check_service(service_backend: str, service_backend_options: Mapping[str, Any] | None) -> None:
    if service_backend != "direct":
        raise ValueError(
            f"logger.service_backend={service_backend!r} is not supported: tdrl loggers write from the trainer's "
            "process (use 'direct')"
        )
    if service_backend_options:
        raise ValueError(
            f"logger.service_backend_options={dict(service_backend_options)} only applies to TorchRL's "
            "'process'/'ray' logger services; leave it empty"
        )


_L = TypeVar("_L", bound=Logger)


def _default_fps(logger: _L, video_fps: int) -> _L:
    log_video = logger.log_video

    @functools.wraps(log_video)
    def with_fps(name: str, video: Any, step: int | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("fps", video_fps)
        log_video(name, video, step, **kwargs)

    # instance attributes on purpose: this logger's videos default to the configured fps
    vars(logger).update(video_fps=video_fps, log_video=with_fps)
    return logger


def make_csv_logger(
    exp_name: str,
    log_dir: str | None = None,
    video_format: Literal["pt", "memmap", "mp4"] = "pt",
    video_fps: int = 30,
    service_backend: str = "direct",
    service_backend_options: Mapping[str, Any] | None = None,
) -> CSVLogger:
    """Builds a :class:`~tdrl.record.CSVLogger` (videos saved as tensors keep ``video_fps`` as an attribute).

    Examples:
        >>> import tempfile
        >>> make_csv_logger("demo", log_dir=tempfile.mkdtemp(), video_fps=12).video_fps
        12
    """
    _check_service(service_backend, service_backend_options)
    return _default_fps(CSVLogger(exp_name, log_dir=log_dir, video_format=video_format), video_fps)


def make_tensorboard_logger(
    exp_name: str,
    log_dir: str = "tb_logs",
    service_backend: str = "direct",
    service_backend_options: Mapping[str, Any] | None = None,
) -> TensorboardLogger:
    """Builds a :class:`~tdrl.record.TensorboardLogger`."""
    _check_service(service_backend, service_backend_options)
    return TensorboardLogger(exp_name, log_dir=log_dir)


def make_wandb_logger(
    exp_name: str,
    offline: bool = False,
    save_dir: str | None = None,
    id: str | None = None,  # noqa: A002 - TorchRL's field name
    project: str | None = None,
    base_url: str | None = None,
    video_fps: int = 32,
    log_env_packages: bool = True,
    log_dir: str | None = None,
    wandb_kwargs: Mapping[str, Any] | None = None,
    service_backend: str = "direct",
    service_backend_options: Mapping[str, Any] | None = None,
) -> WandbLogger:
    """Builds a :class:`~tdrl.record.WandbLogger` the way TorchRL's ``wandb`` config does.

    With ``offline: false`` W&B's own settings decide the mode (``WANDB_MODE=offline`` runs without an
    account), as in TorchRL; ``base_url`` selects a W&B server; ``log_env_packages`` stores the versions of
    torch, tensordict and tdrl in the run config; ``wandb_kwargs`` go to ``wandb.init``.
    """
    _check_service(service_backend, service_backend_options)
    if save_dir is not None and log_dir is not None:
        raise ValueError("logger.save_dir and logger.log_dir name the same folder: set only one")
    kwargs = dict(wandb_kwargs or {})
    if not offline:
        kwargs.setdefault("mode", None)  # None: WANDB_MODE / the user's W&B settings decide
    if base_url is not None and wandb is not None:
        kwargs["settings"] = wandb.Settings(base_url=base_url)
    logger = WandbLogger(exp_name, offline=offline, save_dir=save_dir or log_dir, id=id, project=project, **kwargs)
    if log_env_packages:
        logger.log_hparams({"env": _package_versions()})
    return _default_fps(logger, video_fps)


def _package_versions() -> dict[str, str]:
    out = {}
    for name in ("torch", "tensordict", "tdrl", "gymnasium"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


@dataclass
class LoggerConfig(ConfigBase):
    """Parent of logger configs (TorchRL's ``logger/base``): ``exp_name`` and the service fields.

    Examples:
        >>> isinstance(CSVLoggerConfig(exp_name="demo"), LoggerConfig), LoggerConfig().service_backend
        (True, 'direct')
    """

    service_backend: str = "direct"
    service_backend_options: dict[str, Any] = field(default_factory=dict)


@dataclass
class CSVLoggerConfig(LoggerConfig):
    """:class:`~tdrl.record.CSVLogger`: one CSV file per scalar under ``log_dir/exp_name``.

    Examples:
        >>> import tempfile
        >>> from hydra.utils import instantiate
        >>> instantiate(CSVLoggerConfig(exp_name="demo", log_dir=tempfile.mkdtemp())).exp_name
        'demo'
    """

    exp_name: str = MISSING
    log_dir: str | None = None
    video_format: str = "pt"
    video_fps: int = 30
    _target_: str = "tdrl.trainers.algorithms.configs.logging.make_csv_logger"


@dataclass
class TensorboardLoggerConfig(LoggerConfig):
    """:class:`~tdrl.record.TensorboardLogger`.

    Examples:
        >>> import tempfile
        >>> from hydra.utils import instantiate
        >>> logger = instantiate(TensorboardLoggerConfig(exp_name="demo", log_dir=tempfile.mkdtemp()))
        >>> type(logger).__name__, logger.exp_name
        ('TensorboardLogger', 'demo')
    """

    exp_name: str = MISSING
    log_dir: str = "tb_logs"
    _target_: str = "tdrl.trainers.algorithms.configs.logging.make_tensorboard_logger"


@dataclass
class WandbLoggerConfig(LoggerConfig):
    """:class:`~tdrl.record.WandbLogger` (see :func:`make_wandb_logger`).

    Examples:
        >>> cfg = WandbLoggerConfig(exp_name="demo", offline=True, project="tdrl")
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.offline
        ('make_wandb_logger', True)
    """

    exp_name: str = MISSING
    offline: bool = False
    save_dir: str | None = None
    id: str | None = None
    project: str | None = None
    base_url: str | None = None
    video_fps: int = 32
    log_env_packages: bool = True
    log_dir: str | None = None
    wandb_kwargs: dict[str, Any] = field(default_factory=dict)
    _target_: str = "tdrl.trainers.algorithms.configs.logging.make_wandb_logger"


# TorchRL's private factory name, so that a TorchRL YAML's ``_target_`` resolves here after the import swap.
_make_wandb_logger = make_wandb_logger
