"""TorchRL's ``trainers.helpers.envs`` config helpers."""

from __future__ import annotations

from typing import Any

__all__ = ["FRAME_COUNT_FIELDS", "correct_for_frame_skip"]

#: Config fields that count env frames, divided by ``frame_skip`` in :func:`correct_for_frame_skip`.
FRAME_COUNT_FIELDS = (
    "max_frames_per_traj", "total_frames", "frames_per_batch", "record_frames", "annealing_frames",
    "init_random_frames", "init_env_steps", "noops",
)


def correct_for_frame_skip(cfg: Any) -> Any:
    """Divides, in place, every frame-count field of ``cfg`` by ``cfg.frame_skip`` (integer division).

    With ``frame_skip: 4`` each env step is 4 frames, so a budget of ``total_frames`` frames is
    ``total_frames // 4`` collector steps. Fields ``cfg`` does not have are skipped.

    Args:
        cfg: a ``DictConfig`` (or any object with attributes) with a ``frame_skip`` entry.

    Returns:
        ``cfg`` itself.

    Raises:
        ValueError: ``frame_skip`` is missing or not a positive integer.

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = correct_for_frame_skip(OmegaConf.create({"frame_skip": 4, "total_frames": 1000, "lr": 0.1}))
        >>> cfg.total_frames, cfg.lr
        (250, 0.1)
    """
    frame_skip = getattr(cfg, "frame_skip", None)
    if not isinstance(frame_skip, int) or isinstance(frame_skip, bool) or frame_skip < 1:
        raise ValueError(f"correct_for_frame_skip needs cfg.frame_skip, a positive int; got {frame_skip!r}")
    if frame_skip != 1:
        for name in FRAME_COUNT_FIELDS:
            if hasattr(cfg, name) and getattr(cfg, name) is not None:
                setattr(cfg, name, getattr(cfg, name) // frame_skip)
    return cfg
