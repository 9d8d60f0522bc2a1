"""``tdrl plot RUN_DIR...``: the learning curves of runs in one PNG."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def _plot(args: argparse.Namespace) -> int:
    from tdrl.trainers.run import PLOT_KEYS  # torch and matplotlib load here
    from tdrl.trainers.run_logging import plot_run_curves

    out = Path(args.out) if args.out else Path(args.run_dirs[0]) / "learning_curve.png"
    # Without --key: the episode return, else (no RewardSum in the env, or an offline run) the first scalar
    # that every run folder has, as the run's own learning_curve.png does.
    keys = [args.key] if args.key else list(PLOT_KEYS)
    for i, key in enumerate(keys):
        try:
            plot_run_curves(args.run_dirs, out=out, key=key)
            break
        except ValueError:
            if i == len(keys) - 1:
                raise
    print(f"wrote {out}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``tdrl plot``."""
    pl = sub.add_parser("plot", help="overlay the learning curves of runs in one PNG")
    pl.add_argument("run_dirs", nargs="+", help="run folders")
    pl.add_argument("--out", default=None, help="PNG path (default: RUN_DIR/learning_curve.png)")
    pl.add_argument("--key", default=None, help="scalar to draw (default: r_episode, the episode return; else "
                                                "r_training, the mean reward per step; else r_eval_periodic)")
    pl.set_defaults(func=_plot)
