"""Logger helpers: experiment names and a factory by type name."""

from __future__ import annotations

import os
import pathlib
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from tdrl.record.loggers.common import Logger
from tdrl.record.loggers.csv import CSVLogger
from tdrl.record.loggers.mlflow import MLFlowLogger
from tdrl.record.loggers.tensorboard import TensorboardLogger
from tdrl.record.loggers.wandb import WandbLogger

__all__ = ["generate_exp_name", "get_logger"]


def generate_exp_name(model_name: str, experiment_name: str) -> str:
    """Builds a unique experiment name: ``<model>_<experiment>_<8 hex chars>_<yy_mm_dd-HH_MM_SS>``.

    Examples:
        >>> name = generate_exp_name("PPO", "cartpole")
        >>> name.startswith("PPO_cartpole_")
        True
    """
    return "_".join(
        (model_name, experiment_name, uuid.uuid4().hex[:8], datetime.now().strftime("%y_%m_%d-%H_%M_%S"))
    )


def get_logger(
    logger_type: Literal["tensorboard", "csv", "wandb", "mlflow", ""] | None,
    logger_name: str,
    experiment_name: str,
    *,
    state_dict: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Logger | None:
    """Builds a logger by type name (``""``/``None`` gives no logger).

    Args:
        logger_type: ``"csv"``, ``"tensorboard"``, ``"wandb"``, ``"mlflow"`` (tracking URI ``file://<logger_name>``),
            or empty.
        logger_name: the log folder.
        experiment_name: the experiment's name.
        state_dict: a saved :meth:`Logger.state_dict` to continue from (same folder and counters).
        **kwargs: ``wandb_kwargs`` (dict) for W&B; ``mlflow_kwargs`` (dict) for MLflow; ``video_format``/``video_fps`` for CSV (MP4 by default, as
            TorchRL). Keywords meant for another backend (``wandb_kwargs`` given to a CSV logger,
            ``mlflow_kwargs`` to a W&B logger, ...) are ignored, as TorchRL ignores them, so one call serves every backend.

    Examples:
        >>> import tempfile
        >>> get_logger("csv", tempfile.mkdtemp(), "run").__class__.__name__
        'CSVLogger'
        >>> get_logger("", "x", "y") is None
        True
    """
    if not logger_type:
        return None
    if state_dict is not None:
        logger_name = state_dict["log_dir"] or logger_name
        experiment_name = state_dict["exp_name"]
    if logger_type == "csv":
        logger: Logger = CSVLogger(
            experiment_name,
            log_dir=logger_name,
            video_format=kwargs.get("video_format", "mp4"),
            video_fps=int(kwargs.get("video_fps", 30)),
        )
    elif logger_type == "tensorboard":
        logger = TensorboardLogger(experiment_name, log_dir=logger_name)
    elif logger_type == "wandb":
        wandb_kwargs = dict(kwargs.get("wandb_kwargs") or {})
        wandb_kwargs.setdefault("save_dir", logger_name)
        logger = WandbLogger(experiment_name, **wandb_kwargs)
    elif logger_type == "mlflow":
        uri = pathlib.Path(os.path.abspath(logger_name)).as_uri()
        logger = MLFlowLogger(experiment_name, tracking_uri=uri, **dict(kwargs.get("mlflow_kwargs") or {}))
    else:
        raise ValueError(
            f"logger_type must be one of 'csv', 'tensorboard', 'wandb', 'mlflow' or '', got {logger_type!r}"
        )
    if state_dict is not None:
        logger.load_state_dict(state_dict)
    return logger
