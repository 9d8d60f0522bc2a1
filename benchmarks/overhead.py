"""Eager loss overhead: ``test_<algo>_speed[False-None]`` time over ``test_bare_forward[<algo>]`` time.

Both workloads come from ``test_objectives_benchmarks.py`` and run in one process, alternating in short
blocks, so load from other jobs hits both alike (two pytest runs taken minutes apart do not). Reports the
median and the 10th percentile of each and their ratios.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/overhead.py [dqn ppo sac sac_shared] [--blocks 30] [--calls 10]

``sac_shared`` times the SAC loss against ``_bare_sac_shared``: the bare networks with each Q member's trunk
run once on the batch's states, as tdrl's SACLoss does (``sac`` runs it twice, as the separate calls do).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

WORKLOADS = ("dqn", "ppo", "sac", "sac_shared")


class _Capture:
    """Stands in for pytest-benchmark's fixture: keeps the function a test would time."""

    def __call__(self, fn: Callable, *args) -> None:
        self.fn, self.args = fn, args

    def pedantic(self, fn: Callable, args: tuple = (), **_) -> None:
        self.fn, self.args = fn, args


def _workloads(algo: str):
    import test_objectives_benchmarks as bench

    cap = _Capture()
    getattr(bench, f"test_{algo.split('_')[0]}_speed")(cap, None, False)

    def loss():
        return cap.fn(*cap.args)

    bare = getattr(bench, f"_bare_{algo}")()
    return loss, bare


def _block(fn: Callable[[], object], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def measure(algo: str, *, blocks: int, calls: int) -> tuple[list[float], list[float]]:
    """Per-call times of the loss and of the bare forward, one value per block, blocks alternating."""
    loss, bare = _workloads(algo)
    for fn in (loss, bare):
        _block(fn, 3)
    t_loss, t_bare = [], []
    for i in range(blocks):
        pair = ((loss, t_loss), (bare, t_bare)) if i % 2 == 0 else ((bare, t_bare), (loss, t_loss))
        for fn, out in pair:
            out.append(_block(fn, calls))
    return t_loss, t_bare


def _p10(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 10]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("algos", nargs="*", default=list(WORKLOADS), help=f"any of {WORKLOADS} (default: all)")
    parser.add_argument("--blocks", type=int, default=30, help="alternating blocks per workload (default 30)")
    parser.add_argument("--calls", type=int, default=10, help="calls per block (default 10)")
    parser.add_argument("--backend", default="tdrl", choices=("tdrl", "torchrl"))
    args = parser.parse_args(argv)
    unknown = [a for a in args.algos if a not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}")
    if args.blocks < 1 or args.calls < 1:
        parser.error(f"--blocks and --calls must be >= 1, got {args.blocks} and {args.calls}")
    os.environ["TDRL_BENCH_BACKEND"] = args.backend
    os.environ.setdefault("COMPOSITE_LP_AGGREGATE", "0")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    print(f"{args.backend}, {args.blocks} blocks of {args.calls} calls, threads {torch.get_num_threads()}")
    for algo in args.algos:
        t_loss, t_bare = measure(algo, blocks=args.blocks, calls=args.calls)
        med = statistics.median(t_loss) / statistics.median(t_bare)
        p10 = _p10(t_loss) / _p10(t_bare)
        print(
            f"{algo}: loss {statistics.median(t_loss) * 1e3:.3f} ms, bare {statistics.median(t_bare) * 1e3:.3f} ms "
            f"(medians) -> overhead {med:.2f}x; 10th percentiles {_p10(t_loss) * 1e3:.3f} / "
            f"{_p10(t_bare) * 1e3:.3f} ms -> {p10:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
