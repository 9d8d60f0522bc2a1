"""Side-by-side table of two pytest-benchmark JSON files.

Usage::

    python benchmarks/compare.py tdrl.json torchrl.json [--markdown] [--filter SUBSTRING]

For every case it prints the ops/s (iterations per second, 1/mean) of both runs, the ratio A/B
(> 1 means A is faster) and, at the end, the geometric mean of the ratios over the cases both ran.
Cases that only one of the two files holds are listed separately.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def load(path: str | Path) -> dict[str, float]:
    """Maps each benchmark's ``file::name`` to its ops/s."""
    data = json.loads(Path(path).read_text())
    out = {}
    for bench in data.get("benchmarks", []):
        name = bench.get("fullname") or bench["name"]
        # Both runs share the workload names; strip any directory so paths from two checkouts match.
        name = name.split("/")[-1]
        stats = bench["stats"]
        ops = stats.get("ops") or (1.0 / stats["mean"])
        out[name] = float(ops)
    return out


def _fmt(x: float) -> str:
    return f"{x:,.1f}" if x < 1e5 else f"{x:,.0f}"


def compare(a: dict[str, float], b: dict[str, float], *, filt: str | None = None) -> tuple[list, list, list]:
    both, only_a, only_b = [], [], []
    for name in sorted(set(a) | set(b)):
        if filt and filt not in name:
            continue
        if name in a and name in b:
            both.append((name, a[name], b[name], a[name] / b[name]))
        elif name in a:
            only_a.append((name, a[name]))
        else:
            only_b.append((name, b[name]))
    return both, only_a, only_b


def geomean(ratios: list[float]) -> float:
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="JSON of the first run (e.g. tdrl)")
    parser.add_argument("b", help="JSON of the second run (e.g. torchrl)")
    parser.add_argument("--names", default=None, help="labels for A and B, comma-separated (default: tdrl,torchrl)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--filter", default=None, help="only cases whose name contains this")
    args = parser.parse_args(argv)
    la, lb = (args.names or "tdrl,torchrl").split(",")
    both, only_a, only_b = compare(load(args.a), load(args.b), filt=args.filter)
    width = max([len(n) for n, *_ in both + only_a + only_b] + [4])
    if args.markdown:
        print(f"| case | {la} ops/s | {lb} ops/s | {la}/{lb} |")
        print("|---|---:|---:|---:|")
        for name, x, y, r in both:
            print(f"| `{name}` | {_fmt(x)} | {_fmt(y)} | {r:.2f}x |")
    else:
        print(f"{'case':<{width}}  {la + ' ops/s':>14}  {lb + ' ops/s':>14}  {'ratio':>7}")
        for name, x, y, r in both:
            print(f"{name:<{width}}  {_fmt(x):>14}  {_fmt(y):>14}  {r:>6.2f}x")
    ratios = [r for *_, r in both]
    slower = [n for n, *_, r in both if r < 1.0]
    print(f"\ngeometric mean {la}/{lb} over {len(both)} cases: {geomean(ratios):.2f}x")
    if slower:
        print(f"{la} slower on {len(slower)} case(s): " + ", ".join(slower))
    for label, rows in ((la, only_a), (lb, only_b)):
        if rows:
            print(f"\nonly {label} ran {len(rows)} case(s):")
            for name, ops in rows:
                print(f"  {name}: {_fmt(ops)} ops/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
