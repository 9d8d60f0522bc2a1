"""``tdrl export RUN_DIR --format torchscript|onnx|exported-program``: a run's policy as a standalone file.

Only ``argparse`` is imported with this module; torch and the run are imported when the command runs.
"""

from __future__ import annotations

import argparse

__all__ = ["register"]

_FORMATS = ("torchscript", "onnx", "exported-program")


def _export(args: argparse.Namespace) -> int:
    from tdrl.trainers.policy_export import export_run_policy  # heavy (torch): only once the command runs
    from tdrl.trainers.run import policy_source

    path = export_run_policy(args.run_dir, format=args.format, out=args.out, which=args.policy)
    label = policy_source(args.run_dir, args.policy)["label"]  # best.pt may be absent: say which one
    print(f"wrote {path} ({args.format}: observation (B, *obs_shape) -> deterministic action, "
          f"{label})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the ``export`` subcommand to the ``tdrl`` parser's subparsers."""
    ex = sub.add_parser("export", help="write a run's policy as TorchScript, ONNX or a torch.export program",
                        description="Write the deterministic policy of a run as a standalone file mapping a "
                                    "batch of observations to actions in the env's format (discrete: int64 "
                                    "indices). ONNX needs pip install 'tdrl[export]'.")
    ex.add_argument("run_dir")
    ex.add_argument("--format", choices=_FORMATS, required=True)
    ex.add_argument("--out", default=None,
                    help="file to write (default: RUN_DIR/policy.pt, policy.onnx or policy.pt2)")
    ex.add_argument("--policy", choices=("best", "last"), default="best",
                    help="best evaluated policy (best.pt, when the run kept one) or the last checkpoint")
    ex.set_defaults(func=_export)
