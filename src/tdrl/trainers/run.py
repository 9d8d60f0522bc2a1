"""A training run on disk: build it from a config, train, checkpoint, resume, evaluate, summarise.

A run folder holds ``config.yaml`` (the resolved config), ``logs/scalars/*.csv`` (CSVLogger),
``tensorboard/`` (when installed), ``checkpoint.pt`` (+ ``checkpoint.pt.prev``), ``learning_curve.png`` and
``summary.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import torch
from omegaconf import DictConfig, OmegaConf

from tdrl._utils import set_global_seed, timeit
from tdrl.envs import EnvBase
from tdrl.record import CSVLogger, Logger, TensorboardLogger, read_scalars
from tdrl.trainers.checkpoint import ensure_room_to_resume, load_checkpoint, save_checkpoint
from tdrl.trainers.data_parallel import (
    DIST_ENV_KEYS,
    GradientAverager,
    broadcast_module,
    check_world_size,
    init_data_parallel,
    resolve_backend,
    shard_run_config,
    torchrun_env,
)
from tdrl.trainers.evaluation import Evaluator, evaluate_policy
from tdrl.trainers.hooks import LogEpisodeReturn, LogTiming, TrainerHookBase
from tdrl.trainers.policy import BEST, CHECKPOINT, policy_checkpoint
from tdrl.trainers.run_logging import RunLogger, plot_run_curves, progress_text
from tdrl.trainers.run_parts import RunParts, build_parts, is_torchrl_config, load_run_config

__all__ = ["PLOT_KEYS", "Run", "build_run", "data_parallel_world_size", "evaluate_policy", "evaluate_run",
           "evaluate_run_detailed", "policy_source", "resume_run", "train_built_run", "train_data_parallel", "train_run"]

_EVAL_BATCH = 16  # evaluation episodes played side by side in one vectorised env


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
        self._evaluator: Evaluator | None = None

    def __call__(self, batch: Any) -> dict[str, Any] | None:
        frames = self.run.trainer.collected_frames
        if frames - self._last < self.interval:
            return None
        self._last = frames
        if self._evaluator is None:
            env = self.run.parts.make_eval_env(min(self.episodes, _EVAL_BATCH))
            env.set_seed(int(self.run.parts.seed or 0) + 30_000)
            self._evaluator = Evaluator(env, self.run.actor, max_steps=self.max_steps)
        with timeit("trainer/eval", exclusive=True):
            returns = self._evaluator.episode_returns(self.episodes)
        mean = sum(returns) / len(returns)
        if mean >= self.best:
            self.best = mean
            with timeit("trainer/checkpoint", exclusive=True):
                save_checkpoint({"loss_module": self.run.loss.state_dict(), "frames": frames, "eval_return": mean},
                                self.run.run_dir / BEST)
        return {"r_eval_periodic": mean, "r_eval_best": self.best, "log_pbar": True}

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "last": self._last}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self.best, self._last = float(state_dict["best"]), int(state_dict["last"])

    def register(self, trainer: Any, name: str = "best_policy_eval") -> None:
        trainer.register_op("post_steps_log", self)
        trainer.register_module(name, self)


def _make_logger(run_dir: Path, cfg: DictConfig, own: Logger | None) -> Logger:
    loggers: list[Logger] = [CSVLogger("logs", log_dir=str(run_dir))]
    tensorboard = None
    if is_torchrl_config(cfg):
        if own is not None:  # the YAML's own logger keeps writing where it was told to
            loggers.append(own)
    elif cfg.logger.tensorboard:
        try:
            tensorboard = TensorboardLogger("tensorboard", log_dir=str(run_dir))
        except ImportError:
            pass
    return RunLogger(loggers, tensorboard)


class Run:
    """The objects of one run: its :class:`~tdrl.trainers.run_parts.RunParts` wired into its folder.

    The folder adds to the trainer: the logger (CSV in ``logs/``, plus TensorBoard for presets or the
    TorchRL config's own logger), the checkpoint file, the wall clock, the episode-return log, the periodic
    best-policy evaluation (``eval.interval``) and the per-phase timing log.
    """

    def __init__(self, cfg: DictConfig, run_dir: Path, *, parts: RunParts, progress_bar: bool | None = None) -> None:
        self.cfg, self.run_dir, self.parts = cfg, run_dir, parts
        if parts.trainer is None:
            raise ValueError("Run needs parts built with a trainer (build_parts(cfg, with_trainer=True))")
        self.trainer, self.actor, self.loss = parts.trainer, parts.policy, parts.loss
        self.logger = _make_logger(run_dir, cfg, self.trainer.logger)
        self.trainer.logger = self.logger
        self.trainer.save_trainer_file = run_dir / CHECKPOINT
        if progress_bar is not None:
            self.trainer.progress_bar = progress_bar
        self.trainer.pbar_format = progress_text  # fixed-width "return" and "eval" fields
        self.clock = _WallClock()
        self.clock.register(self.trainer)
        if parts.episode_returns:  # offline runs play no training episodes
            LogEpisodeReturn(log_pbar=True).register(self.trainer)
        ev = parts.eval
        if ev.interval:
            _BestPolicyEval(self, interval=ev.interval, episodes=ev.interval_episodes,
                            max_steps=ev.max_steps).register(self.trainer)
        timeit.erase()  # this session's phase times (a resumed checkpoint adds the former sessions')
        if not is_torchrl_config(cfg) and cfg.trainer.log_timings:
            # Last, to include the evaluation above. An op, not a module: checkpoints are the same either way.
            self.trainer.register_op("post_steps_log", LogTiming(prefix="time", percall=False))


def _default_run_dir(parts: RunParts) -> Path:
    return _run_dir_name(parts.algo, parts.env_name)


def _run_dir_name(algo: str, env_name: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{algo}-{env_name.replace('/', '_')}-{stamp}"


def _set_threads(cfg: DictConfig) -> None:
    threads = cfg.get("num_threads")
    torch.set_num_threads(int(threads or torch.get_num_threads()))


def build_run(cfg: DictConfig, *, run_dir: str | os.PathLike | None = None, progress_bar: bool | None = None) -> Run:
    """Builds every object of a composed config, then creates the run folder and writes ``config.yaml``.

    Nothing is written before the config validated and its parts built; if writing fails, a folder this
    call created is removed again.
    """
    _set_threads(cfg)
    return _build_run_folder(cfg, build_parts(cfg), run_dir=run_dir, progress_bar=progress_bar)


def _build_run_folder(cfg: DictConfig, parts: RunParts, *, run_dir: str | os.PathLike | None,
                      progress_bar: bool | None) -> Run:
    path = Path(run_dir or cfg.get("run_dir") or _default_run_dir(parts))
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
        cfg.run_dir = str(path)
        tmp = path / "config.yaml.tmp"
        tmp.write_text(OmegaConf.to_yaml(cfg, resolve=not is_torchrl_config(cfg)))
        os.replace(tmp, path / "config.yaml")
        return Run(cfg, path, parts=parts, progress_bar=progress_bar)
    except BaseException:
        if created:
            shutil.rmtree(path, ignore_errors=True)
        raise


def _finish(run: Run, *, t_start: float, frames_start: int, interrupted: bool = False) -> dict[str, Any]:
    ev = run.parts.eval
    # an interrupted run is evaluated as briefly as a periodic evaluation: the user is waiting to get back
    episodes = ev.interval_episodes if interrupted else ev.episodes
    with timeit("trainer/eval", exclusive=True):
        source = policy_source(run.run_dir, "best", last_frames=run.trainer.collected_frames)
        mean, std, returns = _evaluate(run.parts, run.run_dir, episodes=episodes, policy="best")
        last_mean = mean
        if source["policy"] == "best":  # the last policy is a different one: evaluate it too
            last_mean = _evaluate(run.parts, run.run_dir, episodes=ev.interval_episodes, policy="last")[0]
    trainer = run.trainer
    run.logger.log_scalar("r_eval", mean, step=trainer.collected_frames)
    run.logger.flush()
    # From the CSV file rather than memory: a resumed run's summary covers its former sessions too.
    training = [value for _, value in read_scalars(run.run_dir / "logs").get("r_episode", [])]
    session = time.perf_counter() - t_start
    phases = {k.split("/", 1)[1]: round(v, 3) for k, v in timeit.todict(percall=False).items() if k.startswith("trainer/")}
    summary = {
        "algo": run.parts.algo, "env": run.parts.env_name, "frames": trainer.collected_frames,
        "optim_steps": trainer.optim_count, "offline": bool(getattr(trainer, "offline", False)),
        "eval_return_mean": mean, "eval_return_std": std, "eval_episodes": len(returns),
        "eval_policy": source["policy"], "eval_policy_frames": source["frames"], "eval_return_last_policy": last_mean,
        "interrupted": interrupted,
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


#: what a learning curve draws, first one present: a run too short for any episode to end (or whose env has
#: no RewardSum) has no episode return, so the per-step reward; an offline run has no training episodes either,
#: so its periodic evaluations.
PLOT_KEYS = ("r_episode", "r_training", "r_eval_periodic")


def _plot_curve(run_dir: Path) -> None:
    for key in PLOT_KEYS:
        try:
            plot_run_curves([run_dir], out=run_dir / "learning_curve.png", key=key)
            return
        except ValueError:
            continue


@contextlib.contextmanager
def _stop_on_ctrl_c(trainer: Any) -> Iterator[list[bool]]:
    """While training: a first Ctrl-C (SIGINT) ends the run after the current step, a second one at once.

    The first asks the trainer to stop (:meth:`~tdrl.trainers.Trainer.request_stop`): the step in progress
    finishes, the trainer writes its checkpoint, and the run writes its summary and plot. The second raises
    ``KeyboardInterrupt`` (the ``tdrl`` command exits with 130, keeping the last complete checkpoint).
    Yields a one-item list, ``[True]`` once interrupted.
    """
    interrupted = [False]
    if threading.current_thread() is not threading.main_thread():  # signal handlers belong to the main thread
        yield interrupted
        return

    def handler(signum: int, frame: Any) -> None:
        if interrupted[0]:
            raise KeyboardInterrupt
        interrupted[0] = True
        print("\nCtrl-C: finishing the current step, then the checkpoint, summary and plot "
              "(Ctrl-C again to exit now)", file=sys.stderr, flush=True)
        trainer.request_stop("interrupted (Ctrl-C)")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def _train(run: Run) -> dict[str, Any]:
    t_start = time.perf_counter()
    frames_start = run.trainer.collected_frames
    with _stop_on_ctrl_c(run.trainer) as interrupted:
        run.trainer.train()
        return _finish(run, t_start=t_start, frames_start=frames_start, interrupted=interrupted[0])


def train_built_run(run: Run, cfg: DictConfig) -> dict[str, Any]:
    """Trains a run made by :func:`build_run` and returns its summary (also written to ``summary.json``)."""
    run.logger.log_hparams(OmegaConf.to_container(cfg, resolve=not is_torchrl_config(cfg)))
    return _train(run)


def train_run(cfg: DictConfig, *, run_dir: str | os.PathLike | None = None, progress_bar: bool | None = None) -> dict[str, Any]:
    """Trains a run from scratch and returns its summary (also written to ``summary.json``)."""
    return train_built_run(build_run(cfg, run_dir=run_dir, progress_bar=progress_bar), cfg)


def _load_run(run_dir: str | os.PathLike, progress_bar: bool | None = None) -> Run:
    path = Path(run_dir)
    cfg = load_run_config(path)
    _set_threads(cfg)
    return Run(cfg, path, parts=build_parts(cfg), progress_bar=progress_bar)


def _checkpoint_frames(path: Path) -> int | None:
    state = load_checkpoint(path).get("state")
    return int(state["collected_frames"]) if isinstance(state, Mapping) and "collected_frames" in state else None


def _total_frames(cfg: DictConfig) -> int | None:
    """The length of a run (frames online, gradient steps offline) from its config, either format."""
    if is_torchrl_config(cfg):
        total = cfg.trainer.get("total_frames")
    elif cfg.get("collector") is not None:
        total = cfg.collector.total_frames
    else:
        total = cfg.optim.get("gradient_steps")
    return int(total) if isinstance(total, int) else None


def resume_run(run_dir: str | os.PathLike, *, progress_bar: bool | None = None) -> dict[str, Any]:
    """Continues a run from its last complete checkpoint until its ``total_frames``.

    A run that already reached them is not rebuilt, trained or evaluated again: the summary it wrote is
    returned with ``already_finished=True`` (and a line saying so is printed).
    """
    path = Path(run_dir)
    state = load_checkpoint(path / CHECKPOINT)  # before building anything: fail fast without one
    ensure_room_to_resume(path / CHECKPOINT)  # and on a full disk
    done, total = state.get("state", {}).get("collected_frames"), _total_frames(load_run_config(path))
    if total is not None and isinstance(done, int) and done >= total:
        summary = json.loads((path / "summary.json").read_text()) if (path / "summary.json").exists() else {}
        ret = summary.get("eval_return_mean")
        print(f"{path} is finished: {done} of {total} frames" + (
            f", eval return {ret:.1f} ({summary.get('eval_policy', 'best')} policy)" if ret is not None else "")
              + f"; nothing to resume (tdrl eval {path} evaluates it again)", flush=True)
        return {**summary, "already_finished": True}
    if data_parallel_world_size(load_run_config(path)) > 1:
        return train_data_parallel(load_run_config(path), run_dir=path, resume=True, progress_bar=progress_bar)
    run = _load_run(run_dir, progress_bar)
    run.trainer.load_state_dict(state)
    print(f"resuming {run.run_dir} at {run.trainer.collected_frames} frames", flush=True)
    return _train(run)


def policy_source(run_dir: str | os.PathLike, policy: Literal["best", "last"] = "best", *,
                  last_frames: int | None = None) -> dict[str, Any]:
    """Which checkpoint ``policy`` evaluates in ``run_dir``: ``best.pt`` when asked for and kept, else ``checkpoint.pt``.

    ``last_frames`` (the trainer's count, when the caller has it) saves reading ``checkpoint.pt``, which can hold
    a whole replay buffer.

    Returns:
        ``{"path", "policy": "best"|"last", "frames", "label"}``; ``label`` says it in words (a last-policy
        checkpoint is never called best: ``"last policy (frame 512; the run kept no best.pt)"``).
    """
    chosen = policy_checkpoint(run_dir, policy)  # the one rule, shared with load_policy (and .prev copies)
    if chosen.name == BEST:
        frames = load_checkpoint(chosen).get("frames")
        return {"path": chosen, "policy": "best", "frames": frames,
                "label": f"best policy (best.pt, evaluated at frame {frames})"}
    frames = last_frames if last_frames is not None else _checkpoint_frames(chosen)
    why = "" if policy == "last" else "; the run kept no best.pt"
    return {"path": chosen, "policy": "last", "frames": frames,
            "label": f"last policy (checkpoint.pt, frame {frames}{why})"}


def _evaluate(parts: RunParts, run_dir: Path, *, episodes: int,
              policy: Literal["best", "last"]) -> tuple[float, float, list[float]]:
    source = policy_source(run_dir, policy)["path"]
    # A copy of the loss loads the saved weights, so that evaluating never changes the run's own modules.
    env: EnvBase = parts.make_eval_env(min(episodes, _EVAL_BATCH))  # episodes run side by side
    saved = load_checkpoint(source)["loss_module"]
    current = {k: v.clone() for k, v in parts.loss.state_dict().items()}
    parts.loss.load_state_dict(saved)
    try:
        env.set_seed(int(parts.seed or 0) + 20_000)
        returns = evaluate_policy(env, parts.policy, episodes=episodes, max_steps=parts.eval.max_steps)
    finally:
        parts.loss.load_state_dict(current)
        env.close()
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    return mean, std, returns


def evaluate_run(
    run_dir: str | os.PathLike, *, episodes: int = 10, policy: Literal["best", "last"] = "best"
) -> tuple[float, float, list[float]]:
    """Mean, std and list of deterministic episode returns of a run's policy (either config format).

    ``policy="best"`` uses the best periodically evaluated policy (``best.pt``) when the run kept one,
    else the last checkpoint; ``"last"`` always uses the last checkpoint.
    """
    path = Path(run_dir)
    cfg = load_run_config(path)
    _set_threads(cfg)
    parts = build_parts(cfg, with_trainer=False)
    try:
        return _evaluate(parts, path, episodes=episodes, policy=policy)
    finally:
        if parts.trainer is not None:  # a TorchRL-format config builds its trainer (and collector) whole
            parts.trainer.collector.shutdown()


def evaluate_run_detailed(run_dir: str | os.PathLike, *, episodes: int = 10,
                          policy: Literal["best", "last"] = "best") -> dict[str, Any]:
    """:func:`evaluate_run`, with which policy it evaluated: ``{"mean", "std", "returns", "policy", "frames",
    "source"}`` (``source``: :func:`policy_source`'s label; ``policy`` is ``"last"`` when no ``best.pt`` exists)."""
    source = policy_source(run_dir, policy)
    mean, std, returns = evaluate_run(run_dir, episodes=episodes, policy=policy)
    return {"mean": mean, "std": std, "returns": returns, "policy": source["policy"], "frames": source["frames"],
            "source": source["label"]}


# ---------------------------------------------------------------------- data-parallel learners
def data_parallel_world_size(cfg: DictConfig) -> int:
    """How many data-parallel learners a run config trains with: ``WORLD_SIZE`` when started by ``torchrun``,
    else ``trainer.world_size`` (1 for a TorchRL-format config).

    Raises ``ValueError`` when the two disagree, or the number is not usable (see
    :func:`~tdrl.trainers.data_parallel.check_world_size`).

    Examples:
        >>> from tdrl.trainers.algorithms.configs.presets import compose_run_config
        >>> data_parallel_world_size(compose_run_config(["trainer.world_size=2"]))
        2
    """
    launched = torchrun_env()
    if is_torchrl_config(cfg):
        if launched is not None and launched["world_size"] > 1:
            raise ValueError("data-parallel learners (torchrun) train preset-format configs (tdrl train algo=...); "
                             "a TorchRL-format trainer config trains in one process")
        return 1
    asked = int(cfg.trainer.world_size)
    backend = resolve_backend(cfg.trainer.get("dist_backend"))
    if launched is None:
        return check_world_size(asked, backend)
    if asked not in (1, launched["world_size"]):
        raise ValueError(f"trainer.world_size={asked} but torchrun started WORLD_SIZE={launched['world_size']} "
                         "processes: leave trainer.world_size at 1 (or equal) under torchrun")
    return check_world_size(launched["world_size"], backend)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def train_data_parallel(cfg: DictConfig, *, run_dir: str | os.PathLike | None = None, resume: bool = False,
                        progress_bar: bool | None = None) -> dict[str, Any]:
    """Trains (or, with ``resume=True``, continues) a run with data-parallel learners; returns rank 0's summary.

    Started by ``torchrun``, this process is one rank (``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``MASTER_ADDR``
    from the environment); the other ranks return ``{"rank": r}``. Otherwise it starts ``trainer.world_size``
    local processes (``torch.multiprocessing.spawn``, a free port on 127.0.0.1) and returns the summary rank 0
    wrote. Only rank 0 writes the run folder; on resume every rank loads the same ``checkpoint.pt``.
    See :mod:`tdrl.trainers.data_parallel` for what is global and what is per rank.
    """
    world = data_parallel_world_size(cfg)
    launched = torchrun_env()
    container = OmegaConf.to_container(cfg, resolve=True)
    path = None if run_dir is None and not cfg.get("run_dir") else str(run_dir or cfg.run_dir)
    if launched is not None:
        summary = _train_rank(launched["rank"], world, launched["local_rank"], container, path, resume, progress_bar)
        return {**summary, "run_dir": path} if summary is not None else {"rank": launched["rank"]}
    path = path or str(_run_dir_name(str(cfg.algo), str(cfg.env.name)))
    saved = {key: os.environ.get(key) for key in DIST_ENV_KEYS}
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    try:
        torch.multiprocessing.spawn(_rank_main, args=(world, container, path, resume, progress_bar), nprocs=world,
                                    join=True)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return {**json.loads((Path(path) / "summary.json").read_text()), "run_dir": path}


def _rank_main(rank: int, world: int, container: dict, run_dir: str, resume: bool, progress_bar: bool | None) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    _train_rank(rank, world, rank, container, run_dir, resume, progress_bar)


def _train_rank(rank: int, world: int, local_rank: int, container: dict, run_dir: str | None, resume: bool,
                progress_bar: bool | None) -> dict[str, Any] | None:
    cfg = OmegaConf.create(container)
    ctx = init_data_parallel(rank, world, local_rank=local_rank, backend=cfg.trainer.get("dist_backend"))
    try:
        # the machine's threads shared between the ranks unless num_threads says otherwise
        torch.set_num_threads(int(cfg.get("num_threads") or max(1, (os.cpu_count() or 1) // world)))
        chosen: list[str | None] = [run_dir or (str(_run_dir_name(str(cfg.algo), str(cfg.env.name))) if ctx.is_main else None)]
        torch.distributed.broadcast_object_list(chosen, src=0)  # torchrun: one folder, rank 0's clock
        path = Path(str(chosen[0]))
        parts = build_parts(shard_run_config(cfg, rank, world))
        trainer = parts.trainer
        assert trainer is not None  # build_parts builds one by default
        trainer._frame_scale = world  # every counter counts the frames of all ranks
        trainer.total_frames = int(cfg.collector.total_frames)
        state = load_checkpoint(path / CHECKPOINT) if resume else None
        run = None
        if ctx.is_main:
            run = (Run(cfg, path, parts=parts, progress_bar=progress_bar) if resume
                   else _build_run_folder(cfg, parts, run_dir=path, progress_bar=progress_bar))
            if state is not None:
                trainer.load_state_dict(state)
                print(f"resuming {path} at {trainer.collected_frames} frames ({world} data-parallel learners)",
                      flush=True)
        else:
            trainer.progress_bar, trainer.logger, trainer.save_trainer_file = False, None, None
            if state is not None:  # rank 0's counters, weights and optimiser; this rank's own collector and RNG
                trainer.load_state_dict({k: v for k, v in state.items() if k not in ("collector", "rng", "logger")})
                set_global_seed(int(cfg.seed or 0) + rank + trainer.collected_frames)
        broadcast_module(parts.loss)  # ranks built their networks from different seeds: rank 0's weights for all
        GradientAverager(parts.loss)
        if run is None:
            trainer.train()
            return None
        print(f"run folder: {path} ({world} data-parallel learners, {ctx.backend})", flush=True)
        if state is None:
            run.logger.log_hparams(OmegaConf.to_container(cfg, resolve=True))
        return _train(run)
    finally:
        torch.distributed.destroy_process_group()
