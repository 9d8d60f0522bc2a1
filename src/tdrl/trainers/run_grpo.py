"""A GRPO run on disk (``tdrl train algo=grpo``, ``tdrl resume RUN_DIR``): the run folder of the other algorithms.

The folder holds ``config.yaml`` (the resolved :class:`~tdrl.trainers.algorithms.configs.llm.GRPORunConfig`),
``logs/scalars/*.csv`` (one row per iteration: ``reward``, ``loss``, ``ESS``, ``clip_fraction``, ...),
``checkpoint.pt`` (+ ``checkpoint.pt.prev``; the trainer's state every ``save_interval`` iterations and at the
end), ``learning_curve.png`` (the mean reward per iteration) and ``summary.json``. A first Ctrl-C ends the run
after the iteration in progress, checkpointed; ``tdrl resume RUN_DIR`` continues until ``trainer.iterations``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from tdrl.record import CSVLogger, read_scalars
from tdrl.trainers.algorithms.configs.llm import build_grpo_trainer, compose_grpo_config
from tdrl.trainers.checkpoint import ensure_room_to_resume, load_checkpoint
from tdrl.trainers.policy import CHECKPOINT
from tdrl.trainers.run import _stop_on_ctrl_c
from tdrl.trainers.run_logging import plot_run_curves

__all__ = ["is_grpo_run", "resume_grpo_run", "train_grpo_run"]


def is_grpo_run(run_dir: str | os.PathLike) -> bool:
    """Whether the ``config.yaml`` of ``run_dir`` is a GRPO run's (``algo: grpo``).

    Examples:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "config.yaml").write_text("algo: grpo\\n")
        >>> is_grpo_run(folder)
        True
    """
    path = Path(run_dir) / "config.yaml"
    return path.exists() and OmegaConf.load(path).get("algo") == "grpo"


def _turns(cfg: DictConfig) -> int:
    return int(cfg.task.prompts_per_batch * cfg.task.group_size)


def _build(cfg: DictConfig, run_dir: Path, resumed: int = 0) -> Any:  # noqa: ANN401
    torch.set_num_threads(int(cfg.num_threads))
    trainer = build_grpo_trainer(cfg, resumed=resumed)
    trainer.logger = CSVLogger("logs", log_dir=str(run_dir))
    trainer.save_trainer_file = run_dir / CHECKPOINT
    return trainer


def _train(trainer: Any, cfg: DictConfig, run_dir: Path, k: int) -> dict[str, Any]:  # noqa: ANN401
    t0 = time.perf_counter()
    frames_start = trainer.collected_frames
    with _stop_on_ctrl_c(trainer) as interrupted:
        trainer.train()
    trainer.collector.shutdown()
    # from the CSV file: a resumed run's summary covers its former sessions too
    rewards = [value for _, value in read_scalars(run_dir / "logs").get("reward", [])]
    k = max(1, min(k, len(rewards) // 2))
    mean = lambda rows: sum(rows) / max(1, len(rows))  # noqa: E731
    session = time.perf_counter() - t0
    history = trainer.history
    summary = {
        "algo": "grpo", "env": str(cfg.task.name), "frames": trainer.collected_frames, "iterations": len(history),
        "first": mean(rewards[:k]), "last": mean(rewards[-k:]), "k": k, "interrupted": interrupted[0],
        "wall_time_s": round(history[-1]["wall_time_s"] if history else session, 2),
        "frames_per_s": round((trainer.collected_frames - frames_start) / max(session, 1e-9), 1),
    }
    tmp = run_dir / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2))
    os.replace(tmp, run_dir / "summary.json")
    if rewards:
        plot_run_curves([run_dir], out=run_dir / "learning_curve.png", key="reward")
    return summary


def train_grpo_run(cfg: DictConfig, *, run_dir: str | os.PathLike | None = None, k: int = 10) -> dict[str, Any]:
    """Builds the run of a composed config, writes its folder and trains; returns the summary (``summary.json``).

    ``first`` / ``last`` are the mean rewards of the first / last ``k`` iterations (``k`` <= half the run).
    Nothing is written before the parts are built; a folder this call created is removed if that fails.
    """
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = Path(run_dir or cfg.get("run_dir") or Path("runs") / f"grpo-{cfg.task.name}-{stamp}")
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
        cfg.run_dir = str(path)
        trainer = _build(cfg, path)
        tmp = path / "config.yaml.tmp"
        tmp.write_text(OmegaConf.to_yaml(cfg, resolve=True))
        os.replace(tmp, path / "config.yaml")
    except BaseException:
        if created:
            shutil.rmtree(path, ignore_errors=True)
        raise
    print(f"run folder: {path}", flush=True)
    return _train(trainer, cfg, path, k)


def resume_grpo_run(run_dir: str | os.PathLike, *, k: int = 10) -> dict[str, Any]:
    """Continues a GRPO run from its last complete checkpoint until ``trainer.iterations``.

    A finished run is not rebuilt: its ``summary.json`` comes back with ``already_finished=True``.
    """
    path = Path(run_dir)
    state = load_checkpoint(path / CHECKPOINT)  # before building anything: fail fast without one
    ensure_room_to_resume(path / CHECKPOINT)
    cfg = compose_grpo_config(preset=path / "config.yaml")
    done, total = int(state["frames"]), int(cfg.trainer.iterations) * _turns(cfg)
    if done >= total:
        print(f"{path} is finished: {done} of {total} answers; nothing to resume", flush=True)
        summary = json.loads((path / "summary.json").read_text()) if (path / "summary.json").exists() else {}
        return {**summary, "already_finished": True}
    trainer = _build(cfg, path, resumed=len(state["state"]["history"]))
    trainer.load_state_dict(state["state"])
    print(f"resuming {path} at iteration {len(trainer.history)} ({done} answers)", flush=True)
    return _train(trainer, cfg, path, k)
