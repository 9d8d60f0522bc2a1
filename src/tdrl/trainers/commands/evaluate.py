"""``tdrl eval RUN_DIR``: the deterministic return of a run's best (or last) policy."""

from __future__ import annotations

import argparse
import json

__all__ = ["register"]


def _eval(args: argparse.Namespace) -> int:
    from tdrl.trainers.run import evaluate_run_detailed  # torch and the env load here

    result = evaluate_run_detailed(args.run_dir, episodes=args.episodes, policy=args.policy)
    mean, std, returns = result["mean"], result["std"], result["returns"]
    print(f"eval {args.run_dir}: {result['source']}: mean return {mean:.2f} +- {std:.2f} over {len(returns)} "
          "episodes (deterministic)")
    if args.json:
        print(json.dumps(result))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``tdrl eval``."""
    ev = sub.add_parser("eval", help="evaluate a run's policy deterministically",
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ev.add_argument("run_dir", help="the run folder")
    ev.add_argument("--episodes", type=int, default=10, help="episodes to play")
    ev.add_argument("--json", action="store_true", help="also print the returns as JSON")
    ev.add_argument("--policy", choices=("best", "last"), default="best",
                    help="best evaluated policy (best.pt, when the run kept one) or the last checkpoint")
    ev.set_defaults(func=_eval)
