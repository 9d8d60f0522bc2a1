"""Comparing run folders: a table of their results and a plot of the mean and spread of their learning curves.

``tdrl compare RUN...`` (or the parent folder of ``tdrl train --seeds``) reads each run's ``summary.json``
(written when a run ends) or, for a run that has not finished, its CSV logs: final and best training
return, evaluated return, frames and training time. :func:`plot_spread` draws the episode-return curves
of the runs on a common frame grid: each run faint, their mean, and the band of one standard deviation.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed; the same backend tdrl.record's plots use
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first
import numpy as np  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from tdrl.record import load_curve, read_scalars  # noqa: E402

__all__ = ["RunStats", "find_runs", "format_table", "plot_spread", "run_stats"]


def find_runs(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """Run folders of ``paths``: a path holding ``config.yaml`` is one, else each of its sub-folders that holds one.

    Raises:
        FileNotFoundError: a path that does not exist or holds no run folder (the message lists what it holds).
    """
    runs: list[Path] = []
    for item in map(Path, paths):
        if (item / "config.yaml").is_file():
            runs.append(item)
            continue
        if not item.is_dir():
            raise FileNotFoundError(f"no run folder at {item}")
        found = sorted(p for p in item.iterdir() if (p / "config.yaml").is_file())
        if not found:
            held = sorted(p.name for p in item.iterdir())[:20]
            raise FileNotFoundError(f"{item} is neither a run folder (no config.yaml) nor a folder of runs; it "
                                    f"holds: {', '.join(held) or 'nothing'}")
        runs.extend(found)
    return runs


@dataclasses.dataclass
class RunStats:
    """One run's figures (``None`` where the run has none: no episode ended, or no evaluation yet)."""

    run: Path
    seed: int | None
    frames: int | None
    time_s: float | None
    final_return: float | None
    best_return: float | None
    eval_return: float | None
    finished: bool


def _seed(run_dir: Path) -> int | None:
    cfg = OmegaConf.load(run_dir / "config.yaml")
    # a preset-format config's seed, else a TorchRL-format trainer's
    seed = OmegaConf.select(cfg, "seed", default=None)
    seed = OmegaConf.select(cfg, "trainer.seed", default=None) if seed is None else seed
    return None if seed is None else int(seed)


def run_stats(run_dir: str | os.PathLike) -> RunStats:
    """The figures of one run: from ``summary.json`` when the run finished, else from its logs so far."""
    path = Path(run_dir)
    summary_file = path / "summary.json"
    if summary_file.is_file():
        s = json.loads(summary_file.read_text())
        return RunStats(path, _seed(path), int(s["frames"]), float(s["wall_time_s"]), s.get("final_train_return"),
                        s.get("best_train_return"), s.get("eval_return_mean"), True)
    scalars = read_scalars(path / "logs") if (path / "logs").is_dir() else {}
    returns = [v for _, v in scalars.get("r_episode", [])]
    steps = [s for rows in scalars.values() for s, _ in rows]
    clock = scalars.get("wall_time", [])
    evals = scalars.get("r_eval_best", [])
    return RunStats(path, _seed(path), max(steps) if steps else None, clock[-1][1] if clock else None,
                    returns[-1] if returns else None, max(returns) if returns else None,
                    evals[-1][1] if evals else None, False)


def _fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _mean_std(values: list[float | int | None]) -> tuple[float, float] | None:
    known = [float(v) for v in values if v is not None]
    if not known:
        return None
    mean = sum(known) / len(known)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in known) / len(known))


_COLUMNS = (("final return", "final_return", ".1f"), ("best return", "best_return", ".1f"),
            ("eval return", "eval_return", ".1f"), ("frames", "frames", ",d"), ("time (s)", "time_s", ".1f"))


def format_table(stats: Sequence[RunStats]) -> str:
    """A plain-text table, one row per run and a ``mean +- std`` row when there are several.

    Examples:
        >>> row = RunStats(Path("runs/a"), 0, 512, 2.5, 20.0, 31.0, 25.0, True)
        >>> print(format_table([row]))
        run     seed  final return  best return  eval return  frames  time (s)
        runs/a     0          20.0         31.0         25.0     512       2.5
    """
    header = ["run", "seed", *(name for name, _, _ in _COLUMNS)]
    rows = [[str(s.run) + ("" if s.finished else " (running)"), _fmt(s.seed, "d"),
             *(_fmt(getattr(s, attr), spec) for _, attr, spec in _COLUMNS)] for s in stats]
    if len(stats) > 1:
        cells = []
        for _, attr, spec in _COLUMNS:
            ms = _mean_std([getattr(s, attr) for s in stats])
            spec = spec.replace("d", ".0f")  # a mean of frame counts is no integer
            cells.append("-" if ms is None else f"{format(ms[0], spec)} +- {format(ms[1], spec)}")
        rows.append([f"mean +- std ({len(stats)} runs)", "", *cells])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [header, *rows]]
    return "\n".join(line.rstrip() for line in lines)


def _title(runs: Sequence[Path]) -> str:
    cfg = OmegaConf.load(runs[0] / "config.yaml")
    parts = (OmegaConf.select(cfg, "algo", default=None), OmegaConf.select(cfg, "env.name", default=None))
    what = " on ".join(str(x) for x in parts if isinstance(x, str))
    return f"{what + ': ' if what else ''}mean and std over {len(runs)} runs"


def plot_spread(runs: Sequence[str | os.PathLike], *, out: str | os.PathLike, key: str = "r_episode") -> Path:
    """Draws the ``key`` curves of ``runs`` (faint), their mean and a one-std band on a common frame grid.

    The grid spans the frames every run reached (from the latest first point to the earliest last one); each
    curve is linearly interpolated onto it.

    Raises:
        ValueError: no run has a ``key`` curve of two points or more.
    """
    paths = [Path(r) for r in runs]
    curves = [(p, load_curve(p, key=key)) for p in paths]
    curves = [(p, c) for p, c in curves if len(c["frames"]) >= 2]
    if not curves:
        raise ValueError(f"no run has a {key!r} curve of two points or more: {[str(p) for p in paths]}")
    lo = max(c["frames"][0] for _, c in curves)
    hi = min(c["frames"][-1] for _, c in curves)
    grid = np.linspace(lo, hi, 200) if hi > lo else np.asarray([float(lo)])
    values = np.stack([np.interp(grid, c["frames"], c["value"]) for _, c in curves])
    mean, std = values.mean(0), values.std(0)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for path, curve in curves:
        ax.plot(curve["frames"], curve["value"], alpha=0.25, linewidth=1, label=path.name)
    ax.plot(grid, mean, color="black", linewidth=2, label=f"mean of {len(curves)}")
    ax.fill_between(grid, mean - std, mean + std, color="black", alpha=0.15, label="+- 1 std")
    ax.set_xlabel("frames")
    ax.set_ylabel("episode return" if key == "r_episode" else key)
    ax.set_title(_title([p for p, _ in curves]))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return out_path
