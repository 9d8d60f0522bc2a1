"""Configs for loggers (group ``logger``: ``csv``, ``tensorboard``, ``wandb``)."""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import MISSING

from tdrl.trainers.algorithms.configs.common import ConfigBase

__all__ = ["CSVLoggerConfig", "LoggerConfig", "TensorboardLoggerConfig", "WandbLoggerConfig"]


@dataclass
class LoggerConfig(ConfigBase):
    """Parent of logger configs."""


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
    _target_: str = "tdrl.record.CSVLogger"


@dataclass
class TensorboardLoggerConfig(LoggerConfig):
    """:class:`~tdrl.record.TensorboardLogger`."""

    exp_name: str = MISSING
    log_dir: str = "tb_logs"
    _target_: str = "tdrl.record.TensorboardLogger"


@dataclass
class WandbLoggerConfig(LoggerConfig):
    """:class:`~tdrl.record.WandbLogger`."""

    exp_name: str = MISSING
    offline: bool = False
    save_dir: str | None = None
    id: str | None = None
    project: str | None = None
    _target_: str = "tdrl.record.WandbLogger"
