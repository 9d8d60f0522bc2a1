"""Per-step cost of the env step pipeline, rollouts and collectors, compared between two tdrl source trees.

The pytest-benchmark cases of ``test_envs_benchmark.py`` take seconds per call on a loaded machine and move
by 2x between runs; this script times short blocks many times and keeps the fastest block (the least
disturbed by other jobs), in alternating subprocesses of the two trees (ABBA order), so load hits both
alike. Workloads (1000 steps each, as TorchRL's env benchmarks; ``PendulumEnv`` is tdrl's pure-torch env,
so the figure is mostly library overhead, ``cheetah`` is dm_control's cheetah-run, as in the suite):

* ``rollout``: ``env.rollout(1000, break_when_any_done=False)``;
* ``transformed``: the same on ``TransformedEnv(env, StepCounter(50))``;
* ``collector``: ``Collector(env, frames_per_batch=1000)``, one batch.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/step_overhead.py --trees src /work/wt/arch-baseline/src --rounds 4
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

STEPS = 1000


def _workloads(envs: list[str]) -> dict[str, Callable[[], object]]:
    import importlib.util

    from tdrl.collectors import Collector
    from tdrl.envs import PendulumEnv, StepCounter, TransformedEnv

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


def compare(trees: list[str], rounds: int, blocks: int, envs: list[str]) -> None:
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
    print(f"new: {new}, baseline: {base}\n")
    print(f"| workload ({STEPS} steps) | new ms | baseline ms | baseline/new |")
    print("|---|---:|---:|---:|")
    for name in results[new]:
        a, b = min(results[new][name]), min(results[base][name])
        print(f"| `{name}` | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a:.2f}x |")
    print(f"\nfastest block of {rounds} runs x {blocks} blocks per tree, runs alternating (ABBA)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="store_true", help="time the tdrl importable here; print JSON")
    parser.add_argument("--trees", nargs=2, metavar=("NEW_SRC", "BASELINE_SRC"), help="two tdrl src folders")
    parser.add_argument("--rounds", type=int, default=4, help="subprocess runs per tree (default 4)")
    parser.add_argument("--blocks", type=int, default=15, help="timed calls per workload and run (default 15)")
    parser.add_argument("--envs", nargs="+", default=["pendulum", "cheetah"], choices=["pendulum", "cheetah"])
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run(args.blocks, args.envs)))
    elif args.trees:
        compare(args.trees, args.rounds, args.blocks, args.envs)
    else:
        parser.error("pass --run or --trees NEW_SRC BASELINE_SRC")


if __name__ == "__main__":
    main()
