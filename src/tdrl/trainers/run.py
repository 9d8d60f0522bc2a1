"""A training run on disk: build it from a config, train, checkpoint, resume, evaluate, summarise.

A run folder holds ``config.yaml`` (the resolved config), ``logs/scalars/*.csv`` (CSVLogger),
``tensorboard/`` (when installed), ``checkpoint.pt`` (+ ``checkpoint.pt.prev``), ``learning_curve.png`` and
``summary.json``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import torch
from omegaconf import DictConfig, OmegaConf

from tdrl._utils import set_global_seed, timeit
from tdrl.envs import EnvBase, ExplorationType, set_exploration_type
from tdrl.record import CSVLogger, Logger, TensorboardLogger, plot_runs, read_scalars
from tdrl.trainers.builders import build_agent, build_env, build_trainer
from tdrl.trainers.checkpoint import ensure_room_to_resume, load_checkpoint, save_checkpoint
from tdrl.trainers.config import load_yaml, validate_config
from tdrl.trainers.hooks import LogEpisodeReturn, LogTiming, TrainerHookBase

__all__ = ["Run", "build_run", "evaluate_policy", "evaluate_run", "resume_run", "train_run"]

CHECKPOINT = "checkpoint.pt"
BEST = "best.pt"
_EVAL_BATCH = 16  # evaluation episodes played side by side in one vectorised env


class _FanOutLogger(Logger):
    """Sends every scalar to several loggers (CSV always, TensorBoard when installed)."""

    def __init__(self, loggers: list[Logger]) -> None:
        self.loggers = loggers
        first = loggers[0]
        self.exp_name, self.log_dir, self.experiment = first.exp_name, first.log_dir, first.experiment

    def _create_experiment(self) -> Any:
        return self.loggers[0].experiment

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        for logger in self.loggers:
            logger.log_scalar(name, value, step=step)

    def log_video(self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any) -> None:
        self.loggers[0].log_video(name, video, step=step, **kwargs)

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        for logger in self.loggers:
            logger.log_hparams(cfg)

    def log_histogram(self, name: str, data: Any, **kwargs: Any) -> None:
        self.loggers[0].log_histogram(name, data, **kwargs)

    def state_dict(self) -> dict[str, Any]:
        return {type(logger).__name__: logger.state_dict() for logger in self.loggers}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        # "csv": the key of checkpoints written before each backend kept its own state.
        for logger in self.loggers:
            name = type(logger).__name__
            saved = state_dict.get(name, state_dict.get("csv") if isinstance(logger, CSVLogger) else None)
            if saved is not None:
                logger.load_state_dict(saved)


class _WallClock(TrainerHookBase):
    """Logs ``wall_time`` (seconds of training, summed over resumed sessions) with each batch."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return self.offset + time.perf_counter() - self.start

    def __call__(self, batch: Any) -> dict[str, Any]:
        return {"wall_time": self.elapsed()}

    def state_dict(self) -> dict[str, Any]:
        return {"elapsed": self.elapsed()}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self.offset = float(state_dict["elapsed"])
        self.start = time.perf_counter()

    def register(self, trainer: Any, name: str = "wall_clock") -> None:
        trainer.register_op("pre_steps_log", self)
        trainer.register_module(name, self)


class _BestPolicyEval(TrainerHookBase):
    """Every ``interval`` frames, evaluates the deterministic policy and keeps the best one in ``best.pt``.

    PPO's return can dip after a good phase; keeping the best evaluated policy (as SB3's EvalCallback does)
    makes the delivered policy the best one seen, not the last one.
    """

    def __init__(self, run: Run, *, interval: int, episodes: int, max_steps: int) -> None:
        self.run, self.interval, self.episodes, self.max_steps = run, interval, episodes, max_steps
        self.best = float("-inf")
        self._last = 0
        self._env: EnvBase | None = None

    def __call__(self, batch: Any) -> dict[str, Any] | None:
        frames = self.run.trainer.collected_frames
        if frames - self._last < self.interval:
            return None
        self._last = frames
        if self._env is None:
            self._env = build_env(self.run.cfg.env, num_envs=min(self.episodes, _EVAL_BATCH))
            self._env.set_seed(int(self.run.cfg.get("seed") or 0) + 30_000)
        with timeit("trainer/eval", exclusive=True):
            returns = evaluate_policy(self._env, self.run.actor, episodes=self.episodes, max_steps=self.max_steps)
        mean = sum(returns) / len(returns)
        if mean >= self.best:
            self.best = mean
            with timeit("trainer/checkpoint", exclusive=True):
                save_checkpoint({"loss_module": self.run.loss.state_dict(), "frames": frames, "eval_return": mean},
                                self.run.run_dir / BEST)
        return {"r_eval_periodic": mean, "r_eval_best": self.best}

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "last": self._last}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self.best, self._last = float(state_dict["best"]), int(state_dict["last"])

    def register(self, trainer: Any, name: str = "best_policy_eval") -> None:
        trainer.register_op("post_steps_log", self)
        trainer.register_module(name, self)


def _make_logger(run_dir: Path, cfg: DictConfig) -> Logger:
    loggers: list[Logger] = [CSVLogger("logs", log_dir=str(run_dir))]
    if cfg.get("logger", {}).get("tensorboard", True):
        try:
            loggers.append(TensorboardLogger("tensorboard", log_dir=str(run_dir)))
        except ImportError:
            pass
    return _FanOutLogger(loggers)


class Run:
    """The objects of one run, built from its config (see :func:`build_run`)."""

    def __init__(self, cfg: DictConfig, run_dir: Path, *, progress_bar: bool | None = None) -> None:
        self.cfg = cfg
        self.run_dir = run_dir
        torch.set_num_threads(int(cfg.get("num_threads") or torch.get_num_threads()))
        if cfg.get("seed") is not None:
            # Before the networks are built: the trainer seeds only later, so their initial weights (and so
            # the whole run) would otherwise differ between two runs with the same seed.
            set_global_seed(int(cfg.seed))
        self.env = build_env(cfg.env)
        self.agent = build_agent(cfg, self.env)
        self.actor, self.loss = self.agent.policy, self.agent.loss
        self.logger = _make_logger(run_dir, cfg)
        if progress_bar is not None:
            cfg.trainer.progress_bar = progress_bar
        self.trainer = build_trainer(cfg, env=self.env, agent=self.agent, logger=self.logger,
                                     save_file=run_dir / CHECKPOINT)
        self.clock = _WallClock()
        self.clock.register(self.trainer)
        if not getattr(self.trainer, "offline", False):  # offline runs play no training episodes
            LogEpisodeReturn(log_pbar=True).register(self.trainer)
        interval = int(cfg.eval.get("interval") or 0)
        if interval:
            _BestPolicyEval(self, interval=interval, episodes=int(cfg.eval.get("interval_episodes") or 3),
                            max_steps=int(cfg.eval.max_steps)).register(self.trainer)
        timeit.erase()  # this session's phase times (a resumed checkpoint adds the former sessions')
        if cfg.trainer.get("log_timings", True):
            # Last, to include the evaluation above. An op, not a module: checkpoints are the same either way.
            self.trainer.register_op("post_steps_log", LogTiming(prefix="time", percall=False))


def _default_run_dir(cfg: DictConfig) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    env = str(cfg.env.name).replace("/", "_")
    return Path("runs") / f"{cfg.algo}-{env}-{stamp}"


def build_run(cfg: DictConfig, *, run_dir: str | os.PathLike | None = None, progress_bar: bool | None = None) -> Run:
    """Validates ``cfg``, creates the run folder, writes ``config.yaml`` and builds every object."""
    validate_config(cfg)
    path = Path(run_dir or cfg.get("run_dir") or _default_run_dir(cfg))
    path.mkdir(parents=True, exist_ok=True)
    cfg.run_dir = str(path)
    tmp = path / "config.yaml.tmp"
    tmp.write_text(OmegaConf.to_yaml(cfg, resolve=True))
    os.replace(tmp, path / "config.yaml")
    return Run(cfg, path, progress_bar=progress_bar)


@torch.no_grad()
def evaluate_policy(env: EnvBase, policy: Any, *, episodes: int, max_steps: int) -> list[float]:
    """Returns of ``episodes`` episodes of ``policy`` acting deterministically in ``env`` (at most ``max_steps`` each).

    A batched env (``batch_size=[n]``) plays ``n`` episodes at once: each copy's return is summed up to the
    end of its first episode, which is ``n`` times faster than one episode after the other.
    """
    returns: list[float] = []
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        while len(returns) < episodes:
            if not env.batch_size:
                data = env.rollout(max_steps, policy, break_when_any_done=True)
                returns.append(float(data["next", "reward"].sum()))
                continue
            data = env.rollout(max_steps, policy, break_when_any_done=False)  # [n, T]
            reward = data["next", "reward"].reshape(*data.shape, -1).sum(-1)
            done = data["next", "done"].reshape(*data.shape, -1).any(-1).long()
            in_first_episode = (done.cumsum(-1) - done) == 0  # up to and including the first done
            returns.extend(float(r) for r in (reward * in_first_episode).sum(-1).flatten())
    return returns[:episodes]


def _finish(run: Run, *, t_start: float, frames_start: int) -> dict[str, Any]:
    cfg = run.cfg
    with timeit("trainer/eval", exclusive=True):
        mean, std, returns = evaluate_run(run.run_dir, episodes=int(cfg.eval.episodes))
        last_mean = mean
        if (run.run_dir / BEST).exists():
            last_episodes = int(cfg.eval.get("interval_episodes") or cfg.eval.episodes)
            last_mean = evaluate_run(run.run_dir, episodes=last_episodes, policy="last")[0]
    trainer = run.trainer
    run.logger.log_scalar("r_eval", mean, step=trainer.collected_frames)
    run.logger.flush()
    # From the CSV file rather than memory: a resumed run's summary covers its former sessions too.
    training = [value for _, value in read_scalars(run.run_dir / "logs").get("r_episode", [])]
    session = time.perf_counter() - t_start
    phases = {k.split("/", 1)[1]: round(v, 3) for k, v in timeit.todict(percall=False).items() if k.startswith("trainer/")}
    summary = {
        "algo": cfg.algo, "env": cfg.env.name, "frames": trainer.collected_frames, "optim_steps": trainer._optim_count,
        "offline": bool(getattr(trainer, "offline", False)),
        "eval_return_mean": mean, "eval_return_std": std, "eval_episodes": len(returns),
        "eval_policy": "best" if (run.run_dir / BEST).exists() else "last", "eval_return_last_policy": last_mean,
        "best_train_return": max(training) if training else None,
        "final_train_return": training[-1] if training else None,
        "wall_time_s": round(run.clock.elapsed(), 2),
        "frames_per_s": round((trainer.collected_frames - frames_start) / max(session, 1e-9), 1),
        "time_per_phase_s": phases,
    }
    tmp = run.run_dir / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2))
    os.replace(tmp, run.run_dir / "summary.json")
    _plot_curve(run.run_dir)
    return summary


def _plot_curve(run_dir: Path) -> None:
    # A run too short for any episode to end has no episode return: draw the per-step reward instead.
    # An offline run has no training episodes either: draw its periodic evaluations.
    for key in ("r_episode", "r_training", "r_eval_periodic"):
        try:
            plot_runs([run_dir], out=run_dir / "learning_curve.png", key=key)
            return
        except ValueError:
            continue


def _train(run: Run) -> dict[str, Any]:
    t_start = time.perf_counter()
    frames_start = run.trainer.collected_frames
    run.trainer.train()
    return _finish(run, t_start=t_start, frames_start=frames_start)


def train_run(cfg: DictConfig, *, run_dir: str | os.PathLike | None = None, progress_bar: bool | None = None) -> dict[str, Any]:
    """Trains a run from scratch and returns its summary (also written to ``summary.json``)."""
    run = build_run(cfg, run_dir=run_dir, progress_bar=progress_bar)
    run.logger.log_hparams(OmegaConf.to_container(cfg, resolve=True))
    return _train(run)


def _load_run(run_dir: str | os.PathLike, progress_bar: bool | None = None) -> Run:
    path = Path(run_dir)
    cfg = load_yaml(path / "config.yaml")
    validate_config(cfg)
    return Run(cfg, path, progress_bar=progress_bar)


def resume_run(run_dir: str | os.PathLike, *, progress_bar: bool | None = None) -> dict[str, Any]:
    """Continues a run from its last complete checkpoint until its ``total_frames``."""
    state = load_checkpoint(Path(run_dir) / CHECKPOINT)  # before building anything: fail fast without one
    ensure_room_to_resume(Path(run_dir) / CHECKPOINT)  # and on a full disk
    run = _load_run(run_dir, progress_bar)
    run.trainer.load_state_dict(state)
    print(f"resuming {run.run_dir} at {run.trainer.collected_frames} frames", flush=True)
    return _train(run)


def evaluate_run(
    run_dir: str | os.PathLike, *, episodes: int = 10, policy: Literal["best", "last"] = "best"
) -> tuple[float, float, list[float]]:
    """Mean, std and list of deterministic episode returns of a run's policy.

    ``policy="best"`` uses the best periodically evaluated policy (``best.pt``) when the run kept one,
    else the last checkpoint; ``"last"`` always uses the last checkpoint.
    """
    path = Path(run_dir)
    cfg = load_yaml(path / "config.yaml")
    validate_config(cfg)
    torch.set_num_threads(int(cfg.get("num_threads") or torch.get_num_threads()))
    env = build_env(cfg.env, num_envs=min(episodes, _EVAL_BATCH))  # episodes run side by side
    agent = build_agent(cfg, env)
    actor, loss = agent.policy, agent.loss
    source = path / BEST if policy == "best" and (path / BEST).exists() else path / CHECKPOINT
    loss.load_state_dict(load_checkpoint(source)["loss_module"])
    env.set_seed(int(cfg.get("seed") or 0) + 20_000)
    returns = evaluate_policy(env, actor, episodes=episodes, max_steps=int(cfg.eval.max_steps))
    env.close()
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    return mean, std, returns
