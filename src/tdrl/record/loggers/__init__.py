"""Loggers with TorchRL's interface: ``log_scalar``, ``log_video``, ``log_hparams``, ``log_histogram``."""

from tdrl.record.loggers.common import Logger
from tdrl.record.loggers.csv import CSVExperiment, CSVLogger, read_scalars
from tdrl.record.loggers.mlflow import MLFlowLogger
from tdrl.record.loggers.monitoring import Every, LoggerMonitor
from tdrl.record.loggers.tensorboard import TensorboardLogger
from tdrl.record.loggers.utils import generate_exp_name, get_logger
from tdrl.record.loggers.wandb import WandbLogger

__all__ = [
    "CSVExperiment",
    "CSVLogger",
    "Every",
    "LoggerMonitor",
    "MLFlowLogger",
    "Logger",
    "TensorboardLogger",
    "WandbLogger",
    "generate_exp_name",
    "get_logger",
    "read_scalars",
]
