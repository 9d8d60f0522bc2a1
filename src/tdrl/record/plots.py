"""Learning-curve PNGs of run folders (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first
from matplotlib.ticker import FuncFormatter  # noqa: E402

from tdrl.record.loggers import read_scalars  # noqa: E402

__all__ = ["LABELS", "learning_curve_figure", "load_curve", "plot_runs", "smooth"]


def _dedup(rows: list[tuple[int, float]]) -> list[tuple[int, float]]:
    # A resumed run appends rows for steps it re-collects after its checkpoint: the later row wins.
    latest: dict[int, float] = {}
    for step, value in rows:
        latest[step] = value
    return sorted(latest.items())


def _scalars_dir(run_dir: Path) -> Path:
    logs = run_dir / "logs"
    return logs if (logs / "scalars").is_dir() else run_dir


def load_curve(run_dir: str | os.PathLike, *, key: str = "r_episode") -> dict[str, list[float]]:
    """Reads a run's ``key`` scalar as ``{"frames": [...], "value": [...], "wall_time": [...]}``.

    ``wall_time`` holds, for each point, the training time at that frame count (empty if not logged).

    Examples:
        >>> import tempfile
        >>> from tdrl.record import CSVLogger
        >>> d = Path(tempfile.mkdtemp())
        >>> log = CSVLogger("logs", log_dir=str(d))
        >>> for f in (10, 20):
        ...     log.log_scalar("r_episode", f / 10, step=f)
        ...     log.log_scalar("wall_time", f / 100, step=f)
        >>> load_curve(d)
        {'frames': [10, 20], 'value': [1.0, 2.0], 'wall_time': [0.1, 0.2]}
    """
    scalars = read_scalars(_scalars_dir(Path(run_dir)))
    rows = _dedup(scalars.get(key, []))
    clock = dict(_dedup(scalars.get("wall_time", [])))
    frames = [s for s, _ in rows]
    wall = [clock[s] for s in frames if s in clock]
    return {"frames": frames, "value": [v for _, v in rows], "wall_time": wall if len(wall) == len(frames) else []}


#: axis labels of the scalars a run folder logs (TorchRL's names say little: r_training is a per-step mean)
LABELS = {
    "r_episode": "episode return (training)", "r_training": "mean reward per step (training)",
    "r_eval_periodic": "evaluation return (deterministic)", "r_eval": "final evaluation return",
}


def smooth(values: Sequence[float], *, window: int | None = None) -> list[float]:
    """Trailing moving average over ``window`` points (default: a tenth of the curve, at least 1).

    Examples:
        >>> smooth([0.0, 2.0, 4.0, 6.0], window=2)
        [0.0, 1.0, 3.0, 5.0]
    """
    window = max(1, window if window is not None else len(values) // 10)
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def learning_curve_figure(
    run_dirs: Sequence[str | os.PathLike],
    *,
    key: str = "r_episode",
    labels: Sequence[str] | None = None,
    title: str | None = None,
    eval_key: str | None = None,
    solved: float | None = None,
) -> Any:
    """The matplotlib figure of :func:`plot_runs` (two axes: against frames and against wall time).

    Each run draws its raw curve faintly and its smoothed curve (:func:`smooth`) on top; ``eval_key`` adds its
    points as markers; ``solved`` a dashed horizontal line.

    Raises:
        ValueError: no run folder has a ``key`` scalar.

    Examples:
        >>> import tempfile
        >>> from tdrl.record import CSVLogger
        >>> d = Path(tempfile.mkdtemp())
        >>> log = CSVLogger("logs", log_dir=str(d))
        >>> for f in (10, 20, 30):
        ...     log.log_scalar("r_episode", f / 10, step=f)
        ...     log.log_scalar("wall_time", f / 100, step=f)
        >>> fig = learning_curve_figure([d], title="demo", solved=2.5)
        >>> [ax.get_xlabel() for ax in fig.axes]
        ['frames', 'wall time (s)']
    """
    if not run_dirs:
        raise ValueError("plot_runs needs at least one run folder")
    labels = list(labels) if labels is not None else [Path(d).name for d in run_dirs]
    fig, (ax_f, ax_t) = plt.subplots(1, 2, figsize=(11, 4))
    drawn = 0
    for run_dir, label in zip(run_dirs, labels):
        curve = load_curve(run_dir, key=key)
        if not curve["frames"]:
            continue
        drawn += 1
        for ax, x in ((ax_f, curve["frames"]), (ax_t, curve["wall_time"])):
            if not x:
                continue
            raw = ax.plot(x, curve["value"], alpha=0.25, linewidth=0.8)[0]
            ax.plot(x, smooth(curve["value"]), color=raw.get_color(), label=f"{label} (smoothed)")
        evals = load_curve(run_dir, key=eval_key) if eval_key else None
        if evals and evals["frames"]:
            ax_f.plot(evals["frames"], evals["value"], "o", markersize=4, label=f"{label}: {LABELS.get(eval_key, eval_key)}")
    if not drawn:
        plt.close(fig)
        raise ValueError(f"no {key!r} scalar in any of {[str(d) for d in run_dirs]}")
    # 204,800 as "205k": full frame counts overlap on the axis.
    ax_f.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k" if abs(x) >= 1000 else f"{x:g}"))
    for ax, xlabel in ((ax_f, "frames"), (ax_t, "wall time (s)")):
        if solved is not None:
            ax.axhline(solved, color="grey", linestyle="--", linewidth=1, label=f"solved ({solved:g})")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(LABELS.get(key, key))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_runs(
    run_dirs: Sequence[str | os.PathLike],
    *,
    out: str | os.PathLike,
    key: str = "r_episode",
    labels: Sequence[str] | None = None,
    title: str | None = None,
    eval_key: str | None = None,
    solved: float | None = None,
) -> Path:
    """Draws ``key`` against frames and against wall time for each run, overlaid, into ``out`` (PNG).

    Args:
        run_dirs: run folders (or CSV experiment folders).
        out: the PNG to write (written to a temp file then renamed).
        key: the scalar to draw (default: training episode return).
        labels: legend entries (default: the folder names).
        title: the figure's title (e.g. the algorithm, env and seed).
        eval_key: a scalar drawn as points on the frames axis (e.g. ``"r_eval_periodic"``).
        solved: the env's solved threshold, drawn as a dashed line.

    Returns:
        The path of the PNG.
    """
    fig = learning_curve_figure(run_dirs, key=key, labels=labels, title=title, eval_key=eval_key, solved=solved)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, out)
    return out
