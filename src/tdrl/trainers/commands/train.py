"""``tdrl train``: compose and validate a run config (torch-free, instant), then build and train the run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from tdrl.trainers.algorithms.configs.presets import (
    base_of,
    compose_run_config,
    config_file,
    describe,
    is_torchrl_config,
    load_yaml,
)
from tdrl.trainers.commands import compare

__all__ = ["compose", "finish", "finish_grpo", "print_summary", "register"]


def compose(args: argparse.Namespace) -> DictConfig:
    """The validated config of ``tdrl train``'s arguments; nothing is built or written.

    A preset-format config composes without torch; a TorchRL-format YAML (``--config-path``) is composed with
    Hydra against the registered configs (:func:`tdrl.trainers.run_parts.compose_run`), which imports them.
    """
    if (args.config_path or args.config_name) and is_torchrl_config(load_yaml(config_file(args.config_path,
                                                                                         args.config_name))):
        from tdrl.trainers.run_parts import compose_run  # the Hydra configs (torch) only for that format

        return compose_run(args.overrides, config_path=args.config_path, config_name=args.config_name)
    return compose_run_config(args.overrides, config_path=args.config_path, config_name=args.config_name)


def _print_config(args: argparse.Namespace, cfg: DictConfig) -> None:
    if is_torchrl_config(cfg):
        origin = str(config_file(args.config_path, args.config_name))
    else:
        origin = base_of(args.overrides, config_path=args.config_path, config_name=args.config_name)
    overrides = " ".join(args.overrides) or "none"
    print(f"# resolved config: {origin}, overrides: {overrides} (every key, defaults and derived values filled)")
    print(OmegaConf.to_yaml(cfg, resolve=not is_torchrl_config(cfg)), end="")


def print_summary(summary: dict[str, Any]) -> None:
    """The end-of-run lines of ``tdrl train`` and ``tdrl resume``."""
    phases = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(summary["time_per_phase_s"].items(), key=lambda kv: -kv[1]))
    unit = "gradient steps" if summary.get("offline") else "frames"
    policy = summary.get("eval_policy", "best")
    frame = summary.get("eval_policy_frames")
    source = f"{policy} policy" + (f", from frame {frame}" if frame is not None else "")
    print(
        f"done: {summary['algo']} on {summary['env']}, {summary['frames']} {unit} in {summary['wall_time_s']:.1f}s "
        f"({summary['frames_per_s']:,.0f} {unit}/s)\n"
        f"eval return: {summary['eval_return_mean']:.1f} +- {summary['eval_return_std']:.1f} "
        f"over {summary['eval_episodes']} episodes (deterministic, {source}); best training return: "
        f"{summary['best_train_return']}\ntime per phase: {phases}",
        flush=True,
    )


def _train(args: argparse.Namespace) -> int:
    if getattr(args, "seeds", None) is not None:  # one run per seed, then a comparison (commands/compare.py)
        return compare.train_seeds_command(args, _train)
    if "algo=grpo" in args.overrides or "preset=grpo_sums" in args.overrides:  # the LLM stack: its own config
        return _train_grpo(args)
    # compose + validate first: nothing is built or written before this passes (a typo leaves no run folder)
    cfg = compose(args)
    if args.print_config:
        _print_config(args, cfg)
        return 0
    from tdrl.trainers.run import (  # torch, the envs and the loggers load here
        build_run,
        data_parallel_world_size,
        train_built_run,
        train_data_parallel,
    )

    if data_parallel_world_size(cfg) > 1:  # trainer.world_size=N, or started by torchrun
        summary = train_data_parallel(cfg, progress_bar=False if args.no_progress else None)
        if "run_dir" not in summary:  # a rank other than 0 of torchrun: rank 0 reports
            return 0
        return finish(summary, Path(summary["run_dir"]))
    run = build_run(cfg, progress_bar=False if args.no_progress else None)
    print(f"run folder: {run.run_dir}", flush=True)
    summary = train_built_run(run, cfg)
    print(f"done: {type(run.trainer).__name__}, {summary['frames']} frames in {summary['wall_time_s']:.1f}s")
    return finish(summary, run.run_dir)


def finish(summary: dict[str, Any], run_dir: Path) -> int:
    """Prints a run's summary; an interrupted run (Ctrl-C) says how to resume it and exits with 130."""
    print_summary(summary)
    if summary.get("interrupted"):
        print(f"interrupted at {summary['frames']} frames; resume with: tdrl resume {run_dir}", flush=True)
        return 130
    return 0


def _train_grpo(args: argparse.Namespace) -> int:
    """``tdrl train algo=grpo ...``: the built-in GRPO task (``trainers/algorithms/configs/llm.py``) trained into
    a run folder (``trainers/run_grpo.py``)."""
    from tdrl.trainers.algorithms.configs.llm import compose_grpo_config

    preset = Path(args.config_path) / f"{args.config_name or 'config'}.yaml" if args.config_path else None
    cfg = compose_grpo_config(args.overrides, preset=preset)
    if args.print_config:
        print(f"# resolved config: algo=grpo, overrides: {' '.join(args.overrides) or 'none'}")
        print(OmegaConf.to_yaml(cfg, resolve=True), end="")
        return 0
    from tdrl.trainers.run_grpo import train_grpo_run  # torch and transformers load here

    summary = train_grpo_run(cfg)
    return finish_grpo(summary, Path(cfg.run_dir))


def finish_grpo(summary: dict[str, Any], run_dir: Path) -> int:
    """Prints a GRPO run's summary; an interrupted run says how to resume it and exits with 130."""
    k = int(summary["k"])
    print(f"done: GRPO on {summary['env']}, {int(summary['iterations'])} iterations in {summary['wall_time_s']:.1f}s; "
          f"mean reward first {k} iterations {summary['first']:.3f} -> last {k} {summary['last']:.3f}", flush=True)
    if summary.get("interrupted"):
        print(f"interrupted at {summary['frames']} answers; resume with: tdrl resume {run_dir}", flush=True)
        return 130
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``tdrl train``."""
    tr = sub.add_parser(
        "train", help="train from a preset (default: PPO on CartPole-v1) with KEY=VALUE overrides",
        description="Train an agent. With no argument: PPO on CartPole-v1 until solved.",
        epilog=describe(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tr.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                    help="e.g. algo=a2c env=CartPole-v1 collector.total_frames=50000 run_dir=runs/x preset=ppo_pendulum")
    tr.add_argument("--config-path", default=None, help="folder of a user YAML config (default: none, a preset)")
    tr.add_argument("--config-name", default=None, help="name of the YAML (without .yaml) in --config-path "
                                                        "(default: config)")
    tr.add_argument("--print-config", action="store_true",
                    help="print the resolved config (every key, defaults filled) and exit without training")
    tr.add_argument("--no-progress", action="store_true", help="no progress bar (default: shown on a terminal)")
    compare.add_train_arguments(tr)
    tr.set_defaults(func=_train)
