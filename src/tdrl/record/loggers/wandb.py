"""Weights & Biases logger (the ``wandb`` extra); ``offline=True`` needs no account or network."""

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
    import wandb

    _HAS_WANDB = True
except ImportError:  # wandb is an extra
    wandb = None
    _HAS_WANDB = False

__all__ = ["WandbLogger"]


class WandbLogger(Logger):
    """Logs to a W&B run.

    Args:
        exp_name: the run's name.
        offline: run without a server; files are written under ``save_dir``.
        save_dir: where W&B writes its files (``log_dir`` is accepted as an alias).
        id: the run id, for resuming.
        project: the W&B project.
        **kwargs: passed to ``wandb.init``.

    Raises:
        ImportError: when wandb is not installed (``pip install "tdrl[wandb]"``).
    """

    def __init__(
        self,
        exp_name: str,
        offline: bool = False,
        save_dir: str | None = None,
        id: str | None = None,  # noqa: A002 - TorchRL's argument name
        project: str | None = None,
        **kwargs: Any,
    ) -> None:
        if not _HAS_WANDB:
            raise ImportError("WandbLogger needs the wandb package: pip install 'tdrl[wandb]'")
        log_dir = kwargs.pop("log_dir", None)
        save_dir = save_dir or log_dir or "wandb_logs"
        self.offline = offline
        self._wandb_kwargs = {
            "name": exp_name,
            "dir": save_dir,
            "id": id,
            "project": project,
            "mode": "offline" if offline else _mode(kwargs.pop("mode", "online")),
            "resume": kwargs.pop("resume", "allow"),
            # Each logger owns its run: with wandb's default, a second init in the same process (another
            # logger, a test) returns the still-active first run and its data lands in the wrong folder.
            "reinit": kwargs.pop("reinit", "create_new"),
            **kwargs,
        }
        os.makedirs(save_dir, exist_ok=True)
        self._step = 0
        super().__init__(exp_name=exp_name, log_dir=save_dir)

    def _create_experiment(self) -> Any:
        return wandb.init(**self._wandb_kwargs)

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        if step is None:
            step = self._step
        self._step = max(self._step, int(step))
        self.experiment.log({name: float(value), "trainer/step": int(step)})

    def log_video(self, name: str, video: Tensor, step: int | None = None, **kwargs: Any) -> None:
        # Encoded here (Pillow) rather than by wandb, which needs moviepy for tensors.
        data, _ = encode_gif(video, fps=int(kwargs.get("fps", 30)))
        step = self._step if step is None else int(step)
        path = os.path.join(self.log_dir, "videos", f"{name.replace('/', '_')}_{step}.gif")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fd:
            fd.write(data)
        self._step = max(self._step, step)
        self.experiment.log({name: wandb.Video(path, format="gif"), "trainer/step": step})

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        self.experiment.config.update(_to_plain(cfg), allow_val_change=True)

    def log_histogram(self, name: str, data: Sequence | Tensor, **kwargs: Any) -> None:
        self.experiment.log({name: wandb.Histogram(torch.as_tensor(data).cpu().numpy())})

    def _checkpoint_state(self) -> dict[str, Any]:
        return {"step": self._step, "run_id": getattr(self.experiment, "id", None)}

    def _load_checkpoint_state(self, state_dict: Mapping[str, Any]) -> None:
        self._step = int(state_dict.get("step", 0))


def _mode(mode: str | None) -> str | None:
    """``mode=None`` defers to ``WANDB_MODE`` as it is now (wandb itself reads it once per process)."""
    return os.environ.get("WANDB_MODE") if mode is None else mode
