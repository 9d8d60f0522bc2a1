"""TensorBoard logger (the ``tensorboard`` extra)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from tdrl.record.loggers.common import Logger
from tdrl.record.loggers.csv import _to_plain

try:
    from torch.utils.tensorboard import SummaryWriter

    _HAS_TB = True
except ImportError:  # tensorboard is an extra
    SummaryWriter = None
    _HAS_TB = False

__all__ = ["TensorboardLogger"]


class TensorboardLogger(Logger):
    """Writes TensorBoard event files under ``<log_dir>/<exp_name>``.

    Args:
        exp_name: the experiment's name.
        log_dir: defaults to ``"tb_logs"``.

    Raises:
        ImportError: when tensorboard is not installed (``pip install "tdrl[tensorboard]"``).
    """

    def __init__(self, exp_name: str, log_dir: str = "tb_logs") -> None:
        if not _HAS_TB:
            raise ImportError(
                "TensorboardLogger needs the tensorboard package: pip install 'tdrl[tensorboard]'"
            )
        super().__init__(exp_name=exp_name, log_dir=str(log_dir))

    def _create_experiment(self) -> Any:
        return SummaryWriter(log_dir=os.path.join(self.log_dir, self.exp_name))

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        self.experiment.add_scalar(name, float(value), global_step=step)

    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs: Any) -> None:
        if video.ndim == 4:
            video = video.unsqueeze(0)
        self.experiment.add_video(name, video, global_step=step, fps=kwargs.get("fps", 30))

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        flat: dict[str, Any] = {}

        def visit(prefix: str, obj: Any) -> None:
            if isinstance(obj, Mapping):
                for k, v in obj.items():
                    visit(f"{prefix}.{k}" if prefix else str(k), v)
            else:
                flat[prefix] = obj if isinstance(obj, (int, float, str, bool)) else str(obj)

        visit("", _to_plain(cfg))
        self.experiment.add_text("hparams", "\n".join(f"{k}: {v}" for k, v in sorted(flat.items())))

    def log_histogram(self, name: str, data: Sequence | Tensor, **kwargs: Any) -> None:
        self.experiment.add_histogram(name, torch.as_tensor(data), global_step=kwargs.get("step"))
