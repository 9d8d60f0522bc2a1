"""tdrl.record: loggers, recording transforms (``VideoRecorder``, ...) and learning-curve plots."""

from tdrl.record.loggers import (
    CSVExperiment,
    CSVLogger,
    Every,
    Logger,
    LoggerMonitor,
    MLFlowLogger,
    TensorboardLogger,
    WandbLogger,
    generate_exp_name,
    get_logger,
    read_scalars,
)
from tdrl.record.plots import learning_curve_figure, load_curve, plot_runs
from tdrl.record.recorder import PixelRenderTransform, TensorDictRecorder, VideoRecorder

__all__ = [
    "CSVExperiment",
    "CSVLogger",
    "Every",
    "LoggerMonitor",
    "MLFlowLogger",
    "Logger",
    "PixelRenderTransform",
    "TensorDictRecorder",
    "TensorboardLogger",
    "VideoRecorder",
    "WandbLogger",
    "generate_exp_name",
    "get_logger",
    "learning_curve_figure",
    "load_curve",
    "plot_runs",
    "read_scalars",
]
