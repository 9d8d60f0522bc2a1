"""Watching a trained policy: play episodes of a run's env, render each frame (``rgb_array``) into a video.

``tdrl enjoy RUN_DIR`` calls :func:`enjoy_run`: the policy of :func:`~tdrl.trainers.policy.load_policy`
(deterministic), the run's env made with ``render_mode="rgb_array"``, one episode after the other through
``env.rollout``, each frame streamed into an MP4 (PyAV) or GIF (Pillow) file by
:class:`~tdrl.record.loggers.video.VideoWriter`.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from pathlib import Path
from typing import Any, Literal

from omegaconf import OmegaConf

from tdrl.envs import EnvBase
from tdrl.record.loggers.video import VideoWriter
from tdrl.trainers.builders import build_env
from tdrl.trainers.policy import load_policy, policy_checkpoint
from tdrl.trainers.run_parts import is_torchrl_config, load_run_config

__all__ = ["EnjoyResult", "default_video_path", "enjoy_run"]


@dataclasses.dataclass
class EnjoyResult:
    """What :func:`enjoy_run` played: one return and one length per episode, and the video written."""

    returns: list[float]
    lengths: list[int]
    video: Path | None
    frames: int


def default_video_path(run_dir: str | os.PathLike) -> Path:
    """``RUN_DIR/enjoy.mp4`` when PyAV is installed, else ``RUN_DIR/enjoy.gif`` (Pillow comes with matplotlib)."""
    return Path(run_dir) / ("enjoy.mp4" if importlib.util.find_spec("av") is not None else "enjoy.gif")


def _render_env(cfg: Any, run_dir: Path) -> EnvBase:
    if is_torchrl_config(cfg):
        raise ValueError(f"{run_dir}: tdrl enjoy renders preset-format runs (its env built from config.yaml's env "
                         "section); this run was trained from a TorchRL-format YAML")
    name = str(cfg.env.name)
    if name == "pendulum" or name.startswith("dmc:"):
        raise ValueError(f"{run_dir}: env {name!r} does not render rgb_array frames; tdrl enjoy renders "
                         "gymnasium envs (e.g. CartPole-v1, Pendulum-v1)")
    env_cfg = OmegaConf.to_container(cfg.env, resolve=True)
    env_cfg["kwargs"] = {**env_cfg.get("kwargs", {}), "render_mode": "rgb_array"}
    return build_env(env_cfg, num_envs=1)


def _fps(env: EnvBase, fps: int | None) -> int:
    if fps is not None:
        return fps
    metadata = getattr(env, "metadata", None) or {}
    return int(metadata.get("render_fps") or 30)


def _episode(env: EnvBase, policy: Any, writer: VideoWriter | None, max_steps: int) -> tuple[float, int]:
    td = env.reset()
    if writer is not None:
        writer.add(env.render())

    def frame(env_: EnvBase, _: Any) -> None:
        writer.add(env_.render())  # type: ignore[union-attr]

    # The callback sees every step but the last, whose frame is rendered once the rollout has returned.
    data = env.rollout(max_steps, policy, tensordict=td, auto_reset=False, break_when_any_done=True,
                       callback=frame if writer is not None else None)
    if writer is not None:
        writer.add(env.render())
    return float(data["next", "reward"].sum()), int(data.shape[-1])


def enjoy_run(run_dir: str | os.PathLike, *, episodes: int = 1, video: str | os.PathLike | None = None,
              record: bool = True, which: Literal["best", "last"] = "best", max_steps: int | None = None,
              fps: int | None = None, seed: int = 0) -> EnjoyResult:
    """Plays ``episodes`` episodes of a run's deterministic policy and writes them, one after the other, to a video.

    Args:
        run_dir: a run folder of ``tdrl train`` (preset format, gymnasium env).
        episodes: how many episodes.
        video: an ``.mp4`` or ``.gif`` file (default :func:`default_video_path`).
        record: ``False`` plays without rendering (returns only).
        which: ``"best"`` (``best.pt`` when kept) or ``"last"`` policy.
        max_steps: steps per episode at most (default: the run's ``eval.max_steps``).
        fps: frames per second of the video (default: the env's ``render_fps``, else 30).
        seed: the env's seed (episode ``i`` follows from it).

    Returns:
        An :class:`EnjoyResult`; the video holds ``sum(lengths) + episodes`` frames (each episode's reset frame
        and one per step).
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    source = policy_checkpoint(run_dir, which)  # a clear error for a missing run before anything is built
    cfg = load_run_config(source.parent)
    path = (Path(video) if video is not None else default_video_path(run_dir)) if record else None
    writer = VideoWriter(path, fps=30) if path is not None else None  # checks the suffix and PyAV first
    policy = load_policy(run_dir, which)
    env = _render_env(cfg, Path(run_dir)) if record else build_env(cfg.env, num_envs=1)
    steps = int(max_steps or cfg.eval.max_steps)
    returns: list[float] = []
    lengths: list[int] = []
    try:
        if writer is not None:
            writer.fps = _fps(env, fps)
            path.parent.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
        env.set_seed(seed)
        for _ in range(episodes):
            episode_return, length = _episode(env, policy, writer, steps)
            returns.append(episode_return)
            lengths.append(length)
    finally:
        frames = writer.close() if writer is not None else 0
        env.close()
    return EnjoyResult(returns=returns, lengths=lengths, video=path, frames=frames)
