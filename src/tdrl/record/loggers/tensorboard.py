"""TensorBoard logger (the ``tensorboard`` extra)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from tdrl.record.loggers.common import Logger
from tdrl.record.loggers.csv import _to_plain
from tdrl.record.loggers.video import encode_gif

try:
    from tensorboard.compat.proto.summary_pb2 import Summary
    from torch.utils.tensorboard import SummaryWriter

    _HAS_TB = True
except ImportError:  # tensorboard is an extra
    SummaryWriter = Summary = None
    _HAS_TB = False

__all__ = ["TensorboardLogger"]


class TensorboardLogger(Logger):
    """Writes TensorBoard event files under ``<log_dir>/<exp_name>``.

    Videos are written as animated GIF image summaries (what TensorBoard's ``add_video`` writes) without
    needing moviepy. After :meth:`load_state_dict`, events logged past the saved step by a killed run are
    purged (``SummaryWriter(purge_step=...)``), so a resumed run does not draw them twice.

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
        self._last_step = -1
        super().__init__(exp_name=exp_name, log_dir=str(log_dir))

    def _create_experiment(self, purge_step: int | None = None) -> Any:
        return SummaryWriter(log_dir=os.path.join(self.log_dir, self.exp_name), purge_step=purge_step)

    def _seen(self, step: int | None) -> None:
        if step is not None:
            self._last_step = max(self._last_step, int(step))

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        self._seen(step)
        self.experiment.add_scalar(name, float(value), global_step=step)

    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs: Any) -> None:
        data, (height, width, channels) = encode_gif(video, fps=int(kwargs.get("fps", 30)))
        image = Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=data)
        self._seen(step)
        self.experiment._get_file_writer().add_summary(Summary(value=[Summary.Value(tag=name, image=image)]), step)

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
        self._seen(kwargs.get("step"))
        self.experiment.add_histogram(name, torch.as_tensor(data), global_step=kwargs.get("step"))

    def _checkpoint_state(self) -> dict[str, Any]:
        return {"last_step": self._last_step}

    def _load_checkpoint_state(self, state_dict: Mapping[str, Any]) -> None:
        self._last_step = int(state_dict.get("last_step", -1))
        if self._last_step >= 0:
            self.experiment.close()
            self.experiment = self._create_experiment(purge_step=self._last_step + 1)
