"""``tdrl train ... --seeds 0,1,2`` (one run per seed under a common folder) and ``tdrl compare RUN...``.

Only the standard library is imported with this module (the ``tdrl`` command's help must answer at once);
the config system, torch and matplotlib are imported when a command runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["add_train_arguments", "parse_seeds", "register", "train_seeds_command"]

# set per seed by --seeds: a user's own value would be overwritten
_SEED_KEYS = ("seed", "trainer.seed", "run_dir")


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``.

    Examples:
        >>> parse_seeds("0, 1,2")
        [0, 1, 2]
    """
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--seeds expects comma-separated integers such as 0,1,2, got {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds expects distinct comma-separated integers such as 0,1,2, got {text!r}")
    return seeds


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--seeds`` and ``--parallel`` to the ``train`` parser."""
    parser.add_argument("--seeds", default=None, metavar="S0,S1,...",
                        help="one run per seed, each in PARENT/seed_<S> (PARENT: run_dir=..., default "
                             "runs/<algo>-<env>-<time>-seeds), then a table and PARENT/compare.png")
    parser.add_argument("--parallel", action="store_true",
                        help="with --seeds: train the seeds at once, one process each (logs in PARENT/seed_<S>.log)")


def _parent(cfg: object, given: str | None) -> Path:
    from omegaconf import OmegaConf

    if given:
        return Path(given)
    algo = OmegaConf.select(cfg, "algo", default=None) or "run"
    env = str(OmegaConf.select(cfg, "env.name", default=None) or "env").replace("/", "_")
    return Path("runs") / f"{algo}-{env}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-seeds"


def _plan(args: argparse.Namespace, seeds: list[int]) -> tuple[Path, dict[int, list[str]]]:
    """Validates the config once (nothing is written before) and returns the parent folder and each seed's overrides."""
    from tdrl.trainers.algorithms.configs.presets import is_torchrl_config
    from tdrl.trainers.commands.train import compose

    if "algo=grpo" in args.overrides or "preset=grpo_sums" in args.overrides:
        raise ValueError("--seeds runs the RL presets and TorchRL-format YAMLs; the GRPO task takes seed=...")
    given = [o.partition("=")[2] for o in args.overrides if o.partition("=")[0].lstrip("+") == "run_dir"]
    overrides = [o for o in args.overrides if o.partition("=")[0].lstrip("+") not in _SEED_KEYS]
    cfg = compose(argparse.Namespace(**{**vars(args), "overrides": overrides}))
    key = "trainer.seed" if is_torchrl_config(cfg) else "seed"
    parent = _parent(cfg, given[-1] if given else None)
    taken = [str(parent / f"seed_{s}") for s in seeds if (parent / f"seed_{s}").exists()]
    if taken:
        raise ValueError(f"{', '.join(taken)} already exist: pick another run_dir= for --seeds")
    return parent, {s: [*overrides, f"{key}={s}", f"run_dir={parent / f'seed_{s}'}"] for s in seeds}


def _run_parallel(args: argparse.Namespace, plan: dict[int, list[str]], parent: Path) -> list[int]:
    parent.mkdir(parents=True, exist_ok=True)
    base = [sys.executable, "-m", "tdrl.trainers.cli", "train", "--no-progress"]
    if args.config_path:
        base += ["--config-path", args.config_path]
    if args.config_name:
        base += ["--config-name", args.config_name]
    # Each process gets its share of the cores unless the user chose: N processes of all threads thrash.
    threads = str(max(1, (os.cpu_count() or 1) // len(plan)))
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", threads), "PYTHONUNBUFFERED": "1"}
    procs: dict[int, subprocess.Popen] = {}
    for seed, overrides in plan.items():
        with open(parent / f"seed_{seed}.log", "w") as log:
            procs[seed] = subprocess.Popen([*base, *overrides], stdout=log, stderr=subprocess.STDOUT, env=env)
        print(f"seed {seed}: pid {procs[seed].pid}, log {parent / f'seed_{seed}.log'}", flush=True)
    try:
        codes = {seed: proc.wait() for seed, proc in procs.items()}
    except KeyboardInterrupt:  # each run checkpoints on SIGINT; give them the time to, then stop them
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        raise
    for seed, code in codes.items():
        status = "done" if code == 0 else f"FAILED (exit {code})"
        print(f"seed {seed}: {status}", flush=True)
        if code != 0:
            tail = (parent / f"seed_{seed}.log").read_text().strip().splitlines()[-5:]
            print("\n".join(f"  {line}" for line in tail), file=sys.stderr)
    return [seed for seed, code in codes.items() if code != 0]


def _report(runs: list[Path], out: Path | None) -> None:
    from tdrl.trainers.compare import format_table, plot_spread, run_stats

    print(format_table([run_stats(r) for r in runs]), flush=True)
    if out is not None:
        try:
            print(f"wrote {plot_spread(runs, out=out)}")
        except ValueError as err:  # too short for an episode to end: the table is still worth having
            print(f"no plot: {err}")


def train_seeds_command(args: argparse.Namespace, train_one: Callable[[argparse.Namespace], int]) -> int:
    """``tdrl train --seeds ...``: each seed's run with ``train_one`` (the plain ``train`` command) or in a process."""
    seeds = parse_seeds(args.seeds)
    parent, plan = _plan(args, seeds)
    how = "in parallel processes" if args.parallel else "one after another"
    print(f"seeds {seeds} -> {parent}/seed_<seed> ({how})", flush=True)
    if args.parallel:
        failed = _run_parallel(args, plan, parent)
    else:
        failed = [s for s, ov in plan.items() if train_one(argparse.Namespace(**{**vars(args), "overrides": ov,
                                                                                  "seeds": None})) != 0]
    done = [parent / f"seed_{s}" for s in seeds if s not in failed and (parent / f"seed_{s}" / "config.yaml").exists()]
    if done:
        _report(done, parent / "compare.png")
    return 1 if failed else 0


def _compare(args: argparse.Namespace) -> int:
    from tdrl.trainers.compare import find_runs

    runs = find_runs(args.runs)
    out = Path(args.out) if args.out else Path(os.path.commonpath([os.path.abspath(r) for r in runs])) / "compare.png"
    _report(runs, out)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the ``compare`` subcommand to the ``tdrl`` parser's subparsers."""
    cp = sub.add_parser("compare", help="a table of runs (final/best return, frames, time) and a mean/spread plot",
                        description="Compare run folders (or folders of runs, e.g. the PARENT of --seeds): one row "
                                    "per run, a mean +- std row, and a plot of the mean episode return with a "
                                    "one-std band.")
    cp.add_argument("runs", nargs="+", metavar="RUN", help="run folders, or folders holding run folders")
    cp.add_argument("--out", default=None, help="plot PNG (default: compare.png in the runs' common folder)")
    cp.set_defaults(func=_compare)
