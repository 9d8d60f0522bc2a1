"""``tdrl enjoy RUN_DIR``: play a trained policy and render its episodes to a video file.

Only ``argparse`` is imported with this module (the ``tdrl`` command's help must answer at once); the run,
torch and the env are imported when the command runs.
"""

from __future__ import annotations

import argparse

__all__ = ["register"]


def _enjoy(args: argparse.Namespace) -> int:
    from tdrl.trainers.enjoy import enjoy_run  # heavy (torch, gymnasium): only once the command runs
    from tdrl.trainers.run import policy_source

    result = enjoy_run(args.run_dir, episodes=args.episodes, video=args.video, record=not args.no_video,
                       which=args.policy, max_steps=args.max_steps, fps=args.fps, seed=args.seed)
    for i, (ret, length) in enumerate(zip(result.returns, result.lengths)):
        print(f"episode {i + 1}: return {ret:.2f} ({length} steps)")
    # which="best" falls back to the last checkpoint when the run kept no best.pt: say which one played
    label = policy_source(args.run_dir, args.policy)["label"]
    mean = sum(result.returns) / len(result.returns)
    print(f"mean return {mean:.2f} over {len(result.returns)} episodes ({label}, deterministic)")
    if result.video is not None:
        print(f"wrote {result.video} ({result.frames} frames)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the ``enjoy`` subcommand to the ``tdrl`` parser's subparsers."""
    en = sub.add_parser("enjoy", help="play a run's policy and render the episodes to a video (mp4 or gif)",
                        description="Play episodes of a run's deterministic policy in its env (rendered as "
                                    "rgb_array) and write them to one video file; prints each return.")
    en.add_argument("run_dir")
    en.add_argument("--episodes", type=int, default=1, help="episodes to play (default 1)")
    en.add_argument("--video", default=None, metavar="OUT.mp4|OUT.gif",
                    help="video file (default: RUN_DIR/enjoy.mp4, or enjoy.gif without PyAV)")
    en.add_argument("--no-video", action="store_true", help="play without rendering (returns only)")
    en.add_argument("--policy", choices=("best", "last"), default="best",
                    help="best evaluated policy (best.pt, when the run kept one) or the last checkpoint")
    en.add_argument("--max-steps", type=int, default=None, help="steps per episode at most (default: eval.max_steps)")
    en.add_argument("--fps", type=int, default=None, help="video frames per second (default: the env's)")
    en.add_argument("--seed", type=int, default=0, help="env seed (default 0)")
    en.set_defaults(func=_enjoy)
