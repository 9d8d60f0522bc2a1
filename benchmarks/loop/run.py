"""Side by side: the same PPO CartPole / SAC Pendulum loop on tdrl, TorchRL 0.14.1 and Stable-Baselines3.

Each round runs every implementation once, in a fresh interpreter, alternating the order from round to round
so that load from other jobs hits all of them alike; the table gives medians over rounds of the wall-clock,
seconds per 1k frames, frames/s, the split (env / policy / advantage / update / other, see ``common.py``)
and the deterministic evaluation return of the last policy (so speed is never bought with learning).

    python benchmarks/loop/run.py ppo_cartpole --rounds 3 --sb3-python /path/to/sb3-venv/bin/python
    python benchmarks/loop/run.py sac_pendulum --rounds 1 --write-doc docs/benchmarks.md
    python benchmarks/loop/run.py --make-sb3-venv ~/.cache/sb3-venv     # stable-baselines3 2.9.2, CPU torch

Interpreters: ``--tdrl-python`` (default: this one; ``--tdrl-pythonpath`` is put on its ``PYTHONPATH``),
``--torchrl-python`` (default ``~/.cache/torchrl-anchor-venv/bin/python``), ``--sb3-python`` (default
``~/.cache/sb3-venv/bin/python``); an implementation whose interpreter is missing is skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from common import PHASES, WORKLOADS  # noqa: E402 - sibling modules
from interleave import write_section  # noqa: E402

CACHE = Path.home() / ".cache"
IMPLS = ("tdrl", "torchrl", "sb3")


def make_sb3_venv(path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    pip = [str(path / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "torch==2.13.0"], check=True)  # the CPU build first: no CUDA wheel is pulled
    subprocess.run([*pip, "stable-baselines3==2.9.2", "gymnasium[classic-control]"], check=True)
    print(f"SB3 venv ready: {path / 'bin' / 'python'}")


def command(impl: str, args: argparse.Namespace) -> tuple[list[str], dict[str, str]] | None:
    """The command line of one run of ``impl``, or ``None`` when its interpreter is not there."""
    python = {"tdrl": args.tdrl_python, "torchrl": args.torchrl_python, "sb3": args.sb3_python}[impl]
    if not Path(python).exists():
        return None
    script = HERE / ("sb3.py" if impl == "sb3" else "rl_api.py")
    cmd = [python, str(script), args.workload, "--seed", str(args.seed)]
    cmd += [] if impl == "sb3" else ["--backend", impl]
    for item in args.set:
        cmd += ["--set", item]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["OMP_NUM_THREADS"] = "1"
    if impl == "tdrl" and args.tdrl_pythonpath:
        env["PYTHONPATH"] = args.tdrl_pythonpath
    return cmd, env


def run_once(cmd: list[str], env: dict[str, str], timeout: float) -> dict:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith("LOOP_RESULT "):
            return json.loads(line[len("LOOP_RESULT "):])
    raise SystemExit(f"{' '.join(cmd)} printed no LOOP_RESULT (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def table(results: dict[str, list[dict]], reference: str) -> list[str]:
    med = {impl: {k: statistics.median(r["seconds"][k] for r in rs) for k in ("total", *PHASES)}
           for impl, rs in results.items() if rs}
    ref = med.get(reference, {}).get("total")
    lines = ["| implementation | wall-clock (s) | s / 1k frames | frames/s | "
             + " | ".join(PHASES) + f" | time / {reference} | eval return |",
             "|---" * (6 + len(PHASES)) + "|"]
    for impl, rs in results.items():
        if not rs:
            continue
        m, frames = med[impl], rs[0]["frames"]
        split = " | ".join(f"{m[k]:.1f} s ({100 * m[k] / m['total']:.0f}%)" for k in PHASES)
        ratio = f"{m['total'] / ref:.2f}x" if ref else "n/a"
        rets = ", ".join(f"{r['eval_return_mean']:.1f}" for r in rs)
        version = next(iter(rs[0]["versions"].values()))
        lines.append(f"| {impl} {version} | {m['total']:.1f} | {1000 * m['total'] / frames:.2f} | "
                     f"{frames / m['total']:.0f} | {split} | {ratio} | {rets} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", choices=sorted(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--impls", nargs="+", choices=IMPLS, default=list(IMPLS))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a hyperparameter")
    parser.add_argument("--tdrl-python", default=sys.executable)
    parser.add_argument("--tdrl-pythonpath", default=os.environ.get("TDRL_PYTHONPATH", ""))
    parser.add_argument("--torchrl-python", default=str(CACHE / "torchrl-anchor-venv" / "bin" / "python"))
    parser.add_argument("--sb3-python", default=str(CACHE / "sb3-venv" / "bin" / "python"))
    parser.add_argument("--make-sb3-venv", type=Path, metavar="DIR", help="build a stable-baselines3 venv and exit")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    parser.add_argument("--json", type=Path, help="also write every run's result to this file")
    parser.add_argument("--write-doc", type=Path, metavar="MD",
                        help="write the table into the <!-- interleave:loop-WORKLOAD --> section of MD")
    args = parser.parse_args(argv)
    if args.make_sb3_venv:
        make_sb3_venv(args.make_sb3_venv)
        return 0
    if args.workload is None:
        parser.error("a workload is needed (or --make-sb3-venv)")
    if args.write_doc and args.set:
        parser.error("--write-doc records the workload as defined: drop --set")
    cmds = {impl: command(impl, args) for impl in args.impls}
    for impl, cmd in cmds.items():
        if cmd is None:
            print(f"note: {impl} skipped (no interpreter; see --{impl}-python)", file=sys.stderr)
    impls = [impl for impl in args.impls if cmds[impl] is not None]
    results: dict[str, list[dict]] = {impl: [] for impl in impls}
    load = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for rnd in range(args.rounds):
        order = impls if rnd % 2 == 0 else impls[::-1]
        for impl in order:
            cmd, env = cmds[impl]  # type: ignore[misc]
            result = run_once(cmd, env, args.timeout)
            results[impl].append(result)
            print(f"round {rnd + 1}/{args.rounds} {impl}: {result['seconds']['total']:.1f} s "
                  f"({result.get('cpu_seconds', float('nan')):.1f} s CPU, whole process), "
                  f"return {result['eval_return_mean']:.1f}", flush=True)
    reference = "sb3" if "sb3" in impls else impls[0]
    head = (f"`python benchmarks/loop/run.py {args.workload} --rounds {args.rounds}` ({started}; "
            f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, load "
            f"average {load:.1f} at start, one torch thread, seed {args.seed}; medians over rounds, every "
            "round's eval return listed):")
    lines = [head, "", *table(results, reference)]
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.write_doc:
        write_section(args.write_doc, f"loop-{args.workload}", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
