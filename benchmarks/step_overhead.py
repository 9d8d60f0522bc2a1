"""Per-step cost of the env step pipeline, rollouts and collectors, compared between two tdrl source trees.

The pytest-benchmark cases of ``test_envs_benchmark.py`` take seconds per call on a loaded machine and move
by 2x between runs; this script times short blocks many times and keeps the fastest block (the least
disturbed by other jobs), in alternating subprocesses of the two trees (ABBA order), so load hits both
alike. Workloads (1000 steps each, as TorchRL's env benchmarks; ``PendulumEnv`` is tdrl's pure-torch env,
so the figure is mostly library overhead, ``cheetah`` is dm_control's cheetah-run, as in the suite):

* ``rollout``: ``env.rollout(1000, break_when_any_done=False)``;
* ``transformed``: the same on ``TransformedEnv(env, StepCounter(50))``;
* ``collector``: ``Collector(env, frames_per_batch=1000)``, one batch;
* ``serial``: ``SerialEnv(2, make)`` stepped by a ``RandomPolicy`` (so step by step, not the sub-env rollouts).

``--calls`` counts Python function calls per env step instead of timing (one profiled call of each workload):
a load-independent measure of the library's per-step Python work (the env's own work included).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/step_overhead.py --trees src /work/wt/arch-baseline/src --rounds 4
    python benchmarks/step_overhead.py --trees src /work/wt/arch-baseline/src --calls --envs pendulum
    python benchmarks/step_overhead.py --trees src BASE_SRC --write-doc docs/benchmarks.md --section step-overhead
    python benchmarks/step_overhead.py --run            # time the tdrl on PYTHONPATH, print JSON
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from interleave import write_section  # the sibling script (benchmarks/ is sys.path[0] when run)

STEPS = 1000


def _workloads(envs: list[str]) -> dict[str, Callable[[], object]]:
    import importlib.util

    from tdrl.collectors import Collector
    from tdrl.envs import PendulumEnv, SerialEnv, StepCounter, TransformedEnv
    from tdrl.modules import RandomPolicy

    makers: dict[str, Callable] = {"pendulum": lambda: PendulumEnv(seed=0)}
    if "cheetah" in envs and importlib.util.find_spec("dm_control") is not None:
        from tdrl.envs import DMControlEnv

        makers["cheetah"] = lambda: DMControlEnv("cheetah", "run")
    out: dict[str, Callable[[], object]] = {}
    for name, make in makers.items():
        if name not in envs:
            continue
        env = make()
        out[f"rollout/{name}"] = lambda env=env: env.rollout(STEPS, break_when_any_done=False)
        tenv = TransformedEnv(make(), StepCounter(50))
        out[f"transformed/{name}"] = lambda tenv=tenv: tenv.rollout(STEPS, break_when_any_done=False)
        it = iter(Collector(make(), frames_per_batch=STEPS, total_frames=-1))
        out[f"collector/{name}"] = lambda it=it: next(it)
        senv = SerialEnv(2, make)
        policy = RandomPolicy(senv.full_action_spec)
        out[f"serial/{name}"] = lambda senv=senv, policy=policy: senv.rollout(
            STEPS // 2, policy, break_when_any_done=False
        )
    return out


def run(blocks: int, envs: list[str]) -> dict[str, float]:
    """The fastest of ``blocks`` calls of each workload, in seconds (workloads interleaved per block)."""
    import torch

    torch.manual_seed(0)
    work = _workloads(envs)
    for fn in work.values():
        fn()  # warm-up: caches, first allocations
    best = {name: float("inf") for name in work}
    for _ in range(blocks):
        for name, fn in work.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def count_calls(envs: list[str]) -> dict[str, float]:
    """Python function calls per env step of each workload (one profiled call after a warm-up)."""
    import cProfile
    import pstats

    import torch

    torch.manual_seed(0)
    out = {}
    for name, fn in _workloads(envs).items():
        fn()
        prof = cProfile.Profile()
        prof.enable()
        fn()
        prof.disable()
        out[name] = pstats.Stats(prof).total_calls / STEPS  # serial: 500 steps of 2 sub-envs
    return out


def compare_calls(trees: list[str], envs: list[str]) -> str:
    """The calls-per-step table of two trees (deterministic: no rounds needed)."""
    counts = []
    for tree in trees:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), OMP_NUM_THREADS="1")
        cmd = [sys.executable, __file__, "--run", "--calls", "--envs", *envs]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        counts.append(json.loads(out.strip().splitlines()[-1]))
    new, base = counts
    lines = [f"| workload ({STEPS} env steps) | new calls/step | baseline calls/step | baseline/new |",
             "|---|---:|---:|---:|"]
    lines += [f"| `{k}` | {new[k]:.1f} | {base[k]:.1f} | {base[k] / new[k]:.2f}x |" for k in new]
    lines.append("\nPython function calls per env step (cProfile's total_calls of one call / steps)")
    text = "\n".join(lines)
    print(f"new: {trees[0]}, baseline: {trees[1]}\n\n{text}")
    return text


def compare(trees: list[str], rounds: int, blocks: int, envs: list[str]) -> str:
    results: dict[str, dict[str, list[float]]] = {tree: {} for tree in trees}
    for r in range(rounds):
        for tree in trees if r % 2 == 0 else trees[::-1]:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
            env.setdefault("OMP_NUM_THREADS", "1")
            cmd = [sys.executable, __file__, "--run", "--blocks", str(blocks), "--envs", *envs]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
            for name, t in json.loads(out.strip().splitlines()[-1]).items():
                results[tree].setdefault(name, []).append(t)
    new, base = trees
    lines = [f"| workload ({STEPS} steps) | new ms | baseline ms | baseline/new |", "|---|---:|---:|---:|"]
    for name in results[new]:
        a, b = min(results[new][name]), min(results[base][name])
        lines.append(f"| `{name}` | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a:.2f}x |")
    lines.append(f"\nfastest block of {rounds} runs x {blocks} blocks per tree, runs alternating (ABBA)")
    text = "\n".join(lines)
    print(f"new: {new}, baseline: {base}\n\n{text}")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="store_true", help="time the tdrl importable here; print JSON")
    parser.add_argument("--trees", nargs=2, metavar=("NEW_SRC", "BASELINE_SRC"), help="two tdrl src folders")
    parser.add_argument("--rounds", type=int, default=4, help="subprocess runs per tree (default 4)")
    parser.add_argument("--blocks", type=int, default=15, help="timed calls per workload and run (default 15)")
    parser.add_argument("--calls", action="store_true", help="count function calls per step instead of timing")
    parser.add_argument("--write-doc", metavar="MD", help="also write the table into the marked --section of MD")
    parser.add_argument("--section", default="step-overhead", help="section of --write-doc (interleave markers)")
    parser.add_argument("--envs", nargs="+", default=["pendulum", "cheetah"], choices=["pendulum", "cheetah"])
    args = parser.parse_args()
    if args.run:
        print(json.dumps(count_calls(args.envs) if args.calls else run(args.blocks, args.envs)))
    elif args.trees:
        if args.calls:
            text = compare_calls(args.trees, args.envs)
        else:
            text = compare(args.trees, args.rounds, args.blocks, args.envs)
        if args.write_doc:
            write_section(Path(args.write_doc), args.section, text)
    else:
        parser.error("pass --run or --trees NEW_SRC BASELINE_SRC")


if __name__ == "__main__":
    main()
