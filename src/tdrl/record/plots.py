"""Learning-curve PNGs of run folders (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first
from matplotlib.ticker import FuncFormatter  # noqa: E402

from tdrl.record.loggers import read_scalars  # noqa: E402

__all__ = ["load_curve", "plot_runs"]


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


def plot_runs(
    run_dirs: Sequence[str | os.PathLike],
    *,
    out: str | os.PathLike,
    key: str = "r_episode",
    labels: Sequence[str] | None = None,
) -> Path:
    """Draws ``key`` against frames and against wall time for each run, overlaid, into ``out`` (PNG).

    Args:
        run_dirs: run folders (or CSV experiment folders).
        out: the PNG to write (written to a temp file then renamed).
        key: the scalar to draw (default: training episode return).
        labels: legend entries (default: the folder names).

    Returns:
        The path of the PNG.
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
        ax_f.plot(curve["frames"], curve["value"], label=label)
        if curve["wall_time"]:
            ax_t.plot(curve["wall_time"], curve["value"], label=label)
    if not drawn:
        plt.close(fig)
        raise ValueError(f"no {key!r} scalar in any of {[str(d) for d in run_dirs]}")
    # 204,800 as "205k": full frame counts overlap on the axis.
    ax_f.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k" if abs(x) >= 1000 else f"{x:g}"))
    for ax, xlabel in ((ax_f, "frames"), (ax_t, "wall time (s)")):
        ax.set_xlabel(xlabel)
        ax.set_ylabel(key)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, out)
    return out
