"""The ``tdrl`` command.

``tdrl train [KEY=VALUE ...]`` trains from a built-in preset (default: PPO on CartPole-v1) or a user YAML,
``tdrl resume RUN_DIR`` continues a run from its last checkpoint, ``tdrl eval RUN_DIR`` measures the
deterministic policy, ``tdrl plot RUN_DIR...`` overlays learning curves, ``tdrl presets`` lists the presets
and ``tdrl rollout`` runs random episodes in an environment (a quick check that an env works).

Adding a subcommand: write ``tdrl/trainers/commands/NAME.py`` with a ``register(subparsers)`` function that
adds its parser and sets ``func`` (``func(args) -> exit code``), and add its module to :data:`COMMANDS` (one
line). A command module imports only the standard library and the torch-free config modules at its top, and
what trains or evaluates (torch, tensordict, gymnasium, matplotlib, wandb) inside ``func``: ``tdrl --help``,
``tdrl train --help``, argument parsing and config validation then answer without loading them
(``benchmarks/cli_latency.py`` measures it).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from tdrl import __version__
from tdrl.trainers.commands.rollout import make_env_from_name

__all__ = ["COMMANDS", "build_parser", "main", "make_env_from_name"]

#: the modules of the subcommands, in the order ``tdrl --help`` lists them; each has ``register(subparsers)``
COMMANDS: tuple[str, ...] = (
    "tdrl.trainers.commands.train",
    "tdrl.trainers.commands.resume",
    "tdrl.trainers.commands.evaluate",
    "tdrl.trainers.commands.plot",
    "tdrl.trainers.commands.presets",
    "tdrl.trainers.commands.rollout",
    "tdrl.trainers.commands.enjoy",
    "tdrl.trainers.commands.export",
    "tdrl.trainers.commands.compare",
)

#: errors printed as one line (``tdrl train: error: ...``, exit code 2) instead of a traceback
_USER_ERRORS = (ValueError, ImportError, KeyError, FileNotFoundError)


def build_parser() -> argparse.ArgumentParser:
    """The ``tdrl`` argument parser, with every module of :data:`COMMANDS` registered."""
    parser = argparse.ArgumentParser(prog="tdrl", description="tdrl: fast, TensorDict-native RL with TorchRL's API")
    parser.add_argument("--version", action="version", version=f"tdrl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tdrl`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except _USER_ERRORS as err:
        print(f"tdrl {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C during training, or one before it started: no traceback
        print(f"tdrl {args.command}: interrupted; exited at once (a run folder keeps its last complete "
              "checkpoint: tdrl resume RUN_DIR)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
