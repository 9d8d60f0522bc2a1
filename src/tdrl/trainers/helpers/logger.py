"""TorchRL's ``trainers.helpers.logger.LoggerConfig``: the logging fields of its older dataclass configs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["LoggerConfig"]


@dataclass
class LoggerConfig:
    """Logging options of TorchRL's helper-based scripts (merged into their config dataclass).

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.structured(LoggerConfig(exp_name="run"))
        >>> cfg.logger, cfg.exp_name, cfg.record_interval
        ('csv', 'run', 1000)
    """

    logger: str = "csv"
    record_video: bool = False
    no_video: bool = True
    exp_name: str = ""
    record_interval: int = 1000
    record_frames: int = 1000
    recorder_log_keys: Any = None
    offline_logging: bool = True
    project_name: str = ""
