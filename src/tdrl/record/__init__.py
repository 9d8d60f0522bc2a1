"""tdrl.record: loggers and learning-curve plots."""

from tdrl.record.loggers import (
    CSVExperiment,
    CSVLogger,
    Logger,
    TensorboardLogger,
    WandbLogger,
    generate_exp_name,
    get_logger,
    read_scalars,
)
from tdrl.record.plots import load_curve, plot_runs

__all__ = [
    "CSVExperiment",
    "CSVLogger",
    "Logger",
    "TensorboardLogger",
    "WandbLogger",
    "generate_exp_name",
    "get_logger",
    "load_curve",
    "plot_runs",
    "read_scalars",
]
