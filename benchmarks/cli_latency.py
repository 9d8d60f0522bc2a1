"""How long the ``tdrl`` command takes to answer before any training: help, parsing, config validation.

Each command runs ``--repeats`` times in a fresh ``python -m tdrl.trainers.cli`` subprocess (the console
script does the same import); the table gives the median wall-clock time and the median CPU time (user +
system of the child: on a machine shared with other jobs, the wall-clock time also counts waiting for a
core). ``import torch`` is the reference: what every command paid before the CLI imported lazily.

    python benchmarks/cli_latency.py [--repeats 5]     # prints a markdown table
    python benchmarks/cli_latency.py --repeats 3 --write-doc docs/cli.md
        # also replaces the marked section <!-- interleave:cli-latency --> of docs/cli.md with it
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from interleave import write_section  # benchmarks/ is on sys.path when run as a script

CLI = [sys.executable, "-m", "tdrl.trainers.cli"]
COMMANDS: list[tuple[str, list[str]]] = [
    ("tdrl --help", [*CLI, "--help"]),
    ("tdrl train --help", [*CLI, "train", "--help"]),
    ("tdrl train optim.lr=fast (rejected)", [*CLI, "train", "optim.lr=fast"]),
    ("tdrl train env=Cartpole-v1 (rejected, did-you-mean)", [*CLI, "train", "env=Cartpole-v1"]),
    ("tdrl train --print-config", [*CLI, "train", "--print-config"]),
    ("tdrl train algo=dqn env=Acrobot-v1 --print-config", [*CLI, "train", "algo=dqn", "env=Acrobot-v1", "--print-config"]),
    ("tdrl presets", [*CLI, "presets"]),
    ("reference: python -c 'import torch'", [sys.executable, "-c", "import torch"]),
]


def _time_one(cmd: list[str], cwd: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per command (median reported)")
    parser.add_argument("--write-doc", metavar="MD", type=Path,
                        help="also write the table into the <!-- interleave:cli-latency --> section of MD")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
             f"load average {load:.1f} at start, median of {args.repeats} runs "
             f"(`python benchmarks/cli_latency.py --repeats {args.repeats}`)", "",
             "| command | wall-clock (s) | CPU (s) |", "|---|---|---|"]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as cwd:  # a failing or printing command must write nothing here
        for name, cmd in COMMANDS:
            _time_one(cmd, cwd)  # warm the page cache
            runs = [_time_one(cmd, cwd) for _ in range(args.repeats)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            lines.append(f"| `{name}` | {wall:.2f} | {cpu:.2f} |")
            print(lines[-1], flush=True)
        left = os.listdir(cwd)
    if left:
        print(f"\nwarning: the commands left {left} in their working directory")
    if args.write_doc:
        write_section(args.write_doc, "cli-latency", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
