"""What a run folder shows while and after it trains: logger fan-out, TensorBoard tags and hparams,
the progress-bar text and the learning-curve plot (title, solved threshold).

The CSV files keep TorchRL's scalar names (``r_episode``, ``r_training``, ``r_eval_periodic``, ...) so that
tools reading TorchRL logs read tdrl's; TensorBoard gets the same values under grouped tags
(:func:`tensorboard_tag`: ``train/``, ``eval/``, ``time/``), and the run's config in the HParams plugin.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from tdrl.record import CSVLogger, Logger, TensorboardLogger, plot_runs

__all__ = ["RunLogger", "SOLVED_RETURNS", "curve_options", "plot_run_curves", "progress_text", "solved_return", "tensorboard_tag"]

#: return at which an env counts as solved, drawn on learning curves: gymnasium's ``reward_threshold``
#: (CartPole-v1, Acrobot-v1, HalfCheetah-v5); Pendulum has none in gymnasium, -200 is the bar of the
#: SAC/TD3/DDPG Pendulum presets (issue #17's gates). dm_control tasks have no agreed threshold.
SOLVED_RETURNS: dict[str, float] = {
    "CartPole-v1": 475.0, "Acrobot-v1": -100.0, "HalfCheetah-v5": 4800.0, "Pendulum-v1": -200.0, "pendulum": -200.0,
}

# CSV name -> TensorBoard tag, for the names whose meaning the CSV name does not say
_TAGS = {
    "r_episode": "train/return", "r_training": "train/reward_per_step", "r_eval_periodic": "eval/return",
    "r_eval_best": "eval/best_return", "r_eval": "eval/final_return", "wall_time": "time/wall_clock_s",
}
# the scalars the HParams plugin shows beside each run's hyperparameters
_HPARAM_METRICS = ("eval/final_return", "eval/best_return", "train/return")


def tensorboard_tag(name: str) -> str:
    """The grouped TensorBoard tag of a run scalar: ``train/...``, ``eval/...`` or ``time/...``.

    Examples:
        >>> tensorboard_tag("r_episode"), tensorboard_tag("loss_objective"), tensorboard_tag("time/trainer/optim")
        ('train/return', 'train/loss_objective', 'time/trainer/optim')
    """
    if name in _TAGS:
        return _TAGS[name]
    return name if name.startswith(("train/", "eval/", "time/")) else f"train/{name}"


def solved_return(env_name: str) -> float | None:
    """The solved threshold of ``env_name`` (:data:`SOLVED_RETURNS`), or ``None`` when none is known."""
    return SOLVED_RETURNS.get(env_name)


def _flat(cfg: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flat(value, f"{name}."))
        else:  # the plugin takes numbers, strings and booleans
            flat[name] = value if isinstance(value, (int, float, str, bool)) else "null" if value is None else str(value)
    return flat


class RunLogger(Logger):
    """Sends every scalar to the run's loggers: CSV (TorchRL's names), the run's TensorBoard (grouped tags)
    and, for a TorchRL-format config, the config's own logger (its own names).

    Args:
        loggers: the loggers that take the names as logged (the first one is the CSV logger).
        tensorboard: the run folder's TensorBoard logger (tags from :func:`tensorboard_tag`), if any.
    """

    def __init__(self, loggers: list[Logger], tensorboard: TensorboardLogger | None = None) -> None:
        self.loggers, self.tensorboard = loggers, tensorboard
        first = loggers[0]
        self.exp_name, self.log_dir, self.experiment = first.exp_name, first.log_dir, first.experiment

    def _all(self) -> list[Logger]:
        return [*self.loggers, *([self.tensorboard] if self.tensorboard is not None else [])]

    def _create_experiment(self) -> Any:
        return self.loggers[0].experiment

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        for logger in self.loggers:
            logger.log_scalar(name, value, step=step)
        if self.tensorboard is not None:
            self.tensorboard.log_scalar(tensorboard_tag(name), value, step=step)

    def log_video(self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any) -> None:
        self.loggers[0].log_video(name, video, step=step, **kwargs)

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """The config as text in the CSV folder; in TensorBoard, the HParams plugin's table (one column per key)."""
        for logger in self.loggers:
            logger.log_hparams(cfg)
        if self.tensorboard is not None:
            from torch.utils.tensorboard.summary import hparams  # tensorboard is installed: its logger exists

            experiment, start, end = hparams(_flat(cfg), dict.fromkeys(_HPARAM_METRICS, 0.0))
            writer = self.tensorboard.experiment._get_file_writer()
            for summary in (experiment, start, end):
                writer.add_summary(summary)

    def log_histogram(self, name: str, data: Any, **kwargs: Any) -> None:
        self.loggers[0].log_histogram(name, data, **kwargs)

    def flush(self) -> None:
        for logger in self._all():
            flush = getattr(logger, "flush", None)
            if callable(flush):
                flush()

    def _names(self) -> list[str]:
        # one key per backend class; a second logger of the same class (a TorchRL YAML's own CSV logger
        # beside the run folder's) gets "#1"
        names: list[str] = []
        for logger in self._all():
            name = type(logger).__name__
            names.append(name if name not in names else f"{name}#{names.count(name)}")
        return names

    def state_dict(self) -> dict[str, Any]:
        return dict(zip(self._names(), (logger.state_dict() for logger in self._all())))

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        # "csv": the key of checkpoints written before each backend kept its own state.
        for name, logger in zip(self._names(), self._all()):
            saved = state_dict.get(name, state_dict.get("csv") if isinstance(logger, CSVLogger) else None)
            if saved is not None:
                logger.load_state_dict(saved)


def progress_text(values: Mapping[str, Any]) -> str:
    """The progress-bar description of a run: fixed-width ``return`` (last episodes) and ``eval`` fields.

    Examples:
        >>> progress_text({"r_episode": 21.5})
        'return    21.5 | eval       - (best       -)'
        >>> progress_text({"r_episode": 500.0, "r_eval_periodic": 480.25, "r_eval_best": 500.0})
        'return   500.0 | eval   480.2 (best   500.0)'
    """
    def field(key: str) -> str:
        value = values.get(key)
        return f"{value:7.1f}" if isinstance(value, (int, float)) else f"{'-':>7}"

    return f"return {field('r_episode')} | eval {field('r_eval_periodic')} (best {field('r_eval_best')})"


def _title(run_dir: Path) -> str | None:
    config = run_dir / "config.yaml"
    if not config.is_file():
        return None
    cfg = OmegaConf.load(config)
    algo, env, seed = cfg.get("algo"), OmegaConf.select(cfg, "env.name"), cfg.get("seed")
    return f"{algo} on {env}, seed {seed}" if algo and env else None


def curve_options(run_dirs: Sequence[str | os.PathLike], key: str) -> dict[str, Any]:
    """The ``title``, ``solved`` and ``eval_key`` arguments of :func:`~tdrl.record.plot_runs` for run folders:
    the title names the algorithm, env and seed (one run) or the env and the number of runs; the solved
    threshold (:data:`SOLVED_RETURNS`) is drawn when every run has the same env and ``key`` is a return."""
    titles = [_title(Path(d)) for d in run_dirs]
    envs = {t.split(" on ", 1)[1].rsplit(", seed", 1)[0] for t in titles if t}
    title = titles[0] if len(titles) == 1 else (f"{', '.join(sorted(envs))}: {len(titles)} runs" if envs else None)
    solved = solved_return(next(iter(envs))) if len(envs) == 1 and key != "r_training" else None
    return {"title": title, "solved": solved, "eval_key": "r_eval_periodic" if key == "r_episode" else None}


def plot_run_curves(run_dirs: Sequence[str | os.PathLike], *, out: str | os.PathLike, key: str) -> Path:
    """:func:`~tdrl.record.plot_runs` of run folders, with :func:`curve_options` (title, evaluations, solved line)."""
    return plot_runs(run_dirs, out=out, key=key, **curve_options(run_dirs, key))
