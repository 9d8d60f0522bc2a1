"""``tdrl resume RUN_DIR``: continue a run from its last complete checkpoint."""

from __future__ import annotations

import argparse
from pathlib import Path

from tdrl.trainers.commands.train import finish, finish_grpo

__all__ = ["register"]


def _resume(args: argparse.Namespace) -> int:
    from tdrl.trainers.run_grpo import is_grpo_run, resume_grpo_run  # torch loads here

    if is_grpo_run(args.run_dir):  # the LLM stack's run folder (trainers/run_grpo.py)
        summary = resume_grpo_run(args.run_dir)
        return 0 if summary.get("already_finished") else finish_grpo(summary, Path(args.run_dir))
    from tdrl.trainers.run import resume_run  # torch loads here

    summary = resume_run(args.run_dir, progress_bar=False if args.no_progress else None)
    if summary.get("already_finished") or set(summary) == {"rank"}:  # torchrun's ranks > 0: rank 0 reports
        return 0
    return finish(summary, Path(args.run_dir))


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``tdrl resume``."""
    rs = sub.add_parser("resume", help="continue a run from its last checkpoint")
    rs.add_argument("run_dir", help="the run folder (holds config.yaml and checkpoint.pt)")
    rs.add_argument("--no-progress", action="store_true", help="no progress bar (default: shown on a terminal)")
    rs.set_defaults(func=_resume)
