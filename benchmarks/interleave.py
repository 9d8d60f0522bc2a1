"""Side-by-side benchmark runs that alternate the two backends, so machine load hits both alike.

``run_compare.sh`` runs every tdrl case, then every TorchRL case; on a shared machine the load can change
between the two halves and a ratio then measures the load, not the libraries. This script splits the work
into groups (pytest ``-k`` expressions, by default one per loss benchmark function) and runs each group
``--reps`` times on each backend, alternating ``tdrl, torchrl, torchrl, tdrl, ...`` (ABBA order). Every run
is its own pytest process writing its own ``--benchmark-json``; per case it keeps the median time of each
run, then reports the median over the runs of each backend and the ratio TorchRL time / tdrl time
(> 1 means tdrl is faster), with the geometric mean over the cases both backends ran. The ratio of the
fastest calls ("by min") is reported too: on a loaded machine it is the less noisy of the two.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/interleave.py --reps 3 --out bench-results/interleave
    python benchmarks/interleave.py -k "test_ppo_speed and True" -k test_bare_forward --reps 5
    python benchmarks/interleave.py --report bench-results/interleave      # re-print a finished run
    python benchmarks/interleave.py --report DIR --write-doc docs/benchmarks.md --section arch-envs
        # replace the marked section <!-- interleave:arch-envs --> ... <!-- /interleave:arch-envs --> with the table

Two tdrl source trees instead of tdrl vs TorchRL: ``--baseline-pythonpath DIR`` (e.g. a worktree of ``main``'s
``src``) runs the second slot with the tdrl interpreter, ``--backend tdrl`` and that ``PYTHONPATH``; the table
then reads "new" (``--tdrl-pythonpath``) against "baseline", and the ratio baseline/new > 1 means the new tree
is faster::

    python benchmarks/interleave.py --file benchmarks/test_envs_benchmark.py -k test_simple --reps 3 \
        --tdrl-pythonpath "$PWD/src" --baseline-pythonpath /work/wt/arch-baseline/src

Interpreters: ``--tdrl-python`` / ``$TDRL_PYTHON`` (default: this interpreter) and ``--torchrl-python`` /
``$TORCHRL_PYTHON`` (default: ``~/.cache/torchrl-anchor-venv/bin/python``). ``--tdrl-pythonpath`` /
``$TDRL_PYTHONPATH`` is put on ``PYTHONPATH`` for the tdrl runs only (e.g. a worktree's ``src``); the
TorchRL runs get no ``PYTHONPATH``. Arguments after ``--`` go to every pytest call
(e.g. ``-- --benchmark-max-time=0.5``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = "benchmarks/test_objectives_benchmarks.py"
LOSS_GROUPS = [
    f"test_{name}_speed"
    for name in ("dqn", "ddpg", "sac", "redq", "redq_deprec", "td3", "cql", "a2c", "ppo", "reinforce", "iql")
] + ["test_bare_forward"]
BACKENDS = ("tdrl", "torchrl")
REFERENCE_PREFIX = "test_bare_forward"


def _interpreters(args: argparse.Namespace) -> dict[str, str]:
    if args.baseline_pythonpath:
        return {"tdrl": args.tdrl_python, "torchrl": args.tdrl_python}
    return {"tdrl": args.tdrl_python, "torchrl": args.torchrl_python}


# Column names of the report: the second slot is another tdrl tree with --baseline-pythonpath.
LABELS = {"tdrl": "tdrl", "torchrl": "torchrl"}


def _env(backend: str, args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", env["OMP_NUM_THREADS"])
    env.pop("PYTHONPATH", None)
    if backend == "tdrl" and args.tdrl_pythonpath:
        env["PYTHONPATH"] = args.tdrl_pythonpath
    if backend == "torchrl" and args.baseline_pythonpath:
        env["PYTHONPATH"] = args.baseline_pythonpath
    return env


def _slug(expr: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in expr).strip("_")[:60]


def _run_one(backend: str, expr: str, rep: int, args: argparse.Namespace, out: Path) -> Path:
    json_path = out / f"{_slug(expr)}.{backend}.{rep}.json"
    cmd = [
        _interpreters(args)[backend], "-m", "pytest", args.file, "-q", "-k", expr,
        "--backend", "tdrl" if args.baseline_pythonpath else backend,
        "--benchmark-json", str(json_path), *args.pytest_args,
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(backend, args), capture_output=True, text=True)
    log = out / f"{_slug(expr)}.{backend}.{rep}.log"
    log.write_text(" ".join(cmd) + "\n\n" + proc.stdout + proc.stderr)
    status = "ok" if proc.returncode == 0 else f"exit {proc.returncode} (see {log.name})"
    print(f"  {backend:<8} rep {rep}  {expr!r}: {time.perf_counter() - t0:6.1f} s, {status}", flush=True)
    return json_path


def _stats(path: Path) -> dict[str, tuple[float, float]]:
    """Case name -> (median, min) seconds per call, from one pytest-benchmark JSON file."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {b["name"]: (float(b["stats"]["median"]), float(b["stats"]["min"])) for b in data.get("benchmarks", [])}


def collect(out: Path) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """``{case: {backend: [(median, min) of each run]}}`` from every JSON file in ``out``."""
    table: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for path in sorted(out.glob("*.json")):
        backend = path.name.split(".")[-3]
        if backend not in BACKENDS:
            continue
        for case, t in _stats(path).items():
            table.setdefault(case, {b: [] for b in BACKENDS})[backend].append(t)
    return table


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def _fmt_ms(t: float) -> str:
    return f"{t * 1e3:.3f}" if t < 0.01 else f"{t * 1e3:.2f}"


def report(out: Path, *, markdown: bool = True) -> str:
    """The comparison table of the runs stored in ``out``, as Markdown (or plain text)."""
    table = collect(out)
    lines = []
    if markdown:
        lines += [
            f"| case | {LABELS['tdrl']} ms | {LABELS['torchrl']} ms | runs | {LABELS['torchrl']}/{LABELS['tdrl']} | by min |",
            "|---|---:|---:|---:|---:|---:|",
        ]
    ratios, min_ratios, slower, only = [], [], [], []
    # Bare network forwards are references (plain modules, no loss code): outside the geometric mean.
    cases = sorted(table, key=lambda c: (c.startswith(REFERENCE_PREFIX), c))
    for case in cases:
        runs = table[case]
        if not runs["tdrl"] or not runs["torchrl"]:
            only.append((case, [b for b in BACKENDS if runs[b]]))
            continue
        a, b = (statistics.median(t for t, _ in runs[k]) for k in BACKENDS)
        a_min, b_min = (min(m for _, m in runs[k]) for k in BACKENDS)
        ratio = b / a
        if not case.startswith(REFERENCE_PREFIX):
            ratios.append(ratio)
            min_ratios.append(b_min / a_min)
            if ratio < 1.0:
                slower.append(case)
        n = f"{len(runs['tdrl'])}/{len(runs['torchrl'])}"
        if markdown:
            lines.append(f"| `{case}` | {_fmt_ms(a)} | {_fmt_ms(b)} | {n} | {ratio:.2f}x | {b_min / a_min:.2f}x |")
        else:
            lines.append(f"{case:<48} {_fmt_ms(a):>10} {_fmt_ms(b):>10} {n:>5} {ratio:>6.2f}x {b_min / a_min:>6.2f}x")
    lines.append("")
    lines.append(
        f"geometric mean {LABELS['torchrl']}/{LABELS['tdrl']} over {len(ratios)} cases: {_geomean(ratios):.2f}x by median, "
        f"{_geomean(min_ratios):.2f}x by min"
    )
    if ratios:
        lines.append(f"lowest {min(ratios):.2f}x; {LABELS['tdrl']} slower on {len(slower)} case(s) {', '.join(slower)}")
    for case, present in only:
        lines.append(f"only {'/'.join(present)} ran {case}")
    lines += _overheads(table)
    return "\n".join(lines)


def _overheads(table: dict[str, dict[str, list[tuple[float, float]]]]) -> list[str]:
    """tdrl's eager loss forward time over the bare networks' forward (``test_bare_forward``)."""
    lines = []
    for algo in ("dqn", "ppo", "sac"):
        loss = table.get(f"test_{algo}_speed[False-None]", {}).get("tdrl")
        bare = table.get(f"{REFERENCE_PREFIX}[{algo}]", {}).get("tdrl")
        if loss and bare:
            med = statistics.median(t for t, _ in loss) / statistics.median(t for t, _ in bare)
            low = min(m for _, m in loss) / min(m for _, m in bare)
            lines.append(f"tdrl eager overhead {algo}: {med:.2f}x by median, {low:.2f}x by min (loss forward / bare forward)")
    return [""] + lines if lines else []


def write_section(doc: Path, section: str, text: str) -> None:
    """Replaces what lies between ``<!-- interleave:SECTION -->`` and ``<!-- /interleave:SECTION -->`` in ``doc``.

    The markers must already be in the file (so a typo in ``section`` cannot append a stray table).
    """
    start, end = f"<!-- interleave:{section} -->", f"<!-- /interleave:{section} -->"
    body = doc.read_text()
    if body.count(start) != 1 or body.count(end) != 1 or body.index(start) > body.index(end):
        raise SystemExit(f"{doc} needs one '{start}' line followed by one '{end}' line")
    head, rest = body.split(start)
    _, tail = rest.split(end)
    doc.write_text(f"{head}{start}\n{text.strip()}\n{end}{tail}")


def _parse(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    pytest_args: list[str] = []
    if "--" in argv:
        pytest_args = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", dest="groups", action="append", help="a pytest -k group (repeatable; default: the loss benchmarks, one group per function)")
    parser.add_argument("--file", default=DEFAULT_FILE, help=f"benchmark file (default {DEFAULT_FILE})")
    parser.add_argument("--reps", type=int, default=3, help="runs per backend and group (default 3)")
    parser.add_argument("--first-rep", type=int, default=0, help="index of the first run (to add runs to a finished "
                        "folder; odd indices start with torchrl)")
    parser.add_argument("--out", default="bench-results/interleave", help="folder for the JSON files, logs and report")
    parser.add_argument("--tdrl-python", default=os.environ.get("TDRL_PYTHON", sys.executable))
    parser.add_argument("--torchrl-python", default=os.environ.get("TORCHRL_PYTHON", str(Path.home() / ".cache/torchrl-anchor-venv/bin/python")))
    parser.add_argument("--tdrl-pythonpath", default=os.environ.get("TDRL_PYTHONPATH", ""), help="PYTHONPATH of the tdrl runs")
    parser.add_argument("--baseline-pythonpath", default=os.environ.get("BASELINE_PYTHONPATH", ""),
                        help="compare two tdrl trees: the second slot runs tdrl with this PYTHONPATH")
    parser.add_argument("--eager-first", action="store_true", help="split each default group into its eager cases "
                        "(all groups first) and its compiled cases, so a run cut short still covers every eager case")
    parser.add_argument("--report", metavar="DIR", help="only print the table of a finished run in DIR")
    parser.add_argument("--write-doc", metavar="MD", help="also write the table into the marked --section of MD")
    parser.add_argument("--section", help="the section name of --write-doc (<!-- interleave:NAME --> markers)")
    args = parser.parse_args(argv)
    args.pytest_args = pytest_args
    return parser, args


def _groups(args: argparse.Namespace) -> list[str]:
    groups = args.groups or LOSS_GROUPS
    if args.eager_first:
        split = [g for g in groups if g.endswith("_speed")]
        groups = [f"{g} and False" if g in split else g for g in groups] + [f"{g} and not False" for g in split]
    return groups


def main(argv: list[str] | None = None) -> int:
    parser, args = _parse(list(sys.argv[1:] if argv is None else argv))
    if args.baseline_pythonpath:
        LABELS.update(tdrl="new", torchrl="baseline")
    if args.write_doc and not args.section:
        parser.error("--write-doc needs --section")
    if args.report:
        text = report(Path(args.report))
        print(text)
        if args.write_doc:
            write_section(Path(args.write_doc), args.section, text)
        return 0
    if args.reps < 1:
        parser.error(f"--reps must be >= 1, got {args.reps}")
    for backend, exe in _interpreters(args).items():
        if not Path(exe).exists():
            parser.error(f"the {backend} interpreter {exe!r} does not exist (set --{backend}-python)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for expr in _groups(args):
        for rep in range(args.first_rep, args.first_rep + args.reps):
            order = BACKENDS if rep % 2 == 0 else BACKENDS[::-1]
            for backend in order:
                _run_one(backend, expr, rep, args, out)
        (out / "report.md").write_text(report(out) + "\n")  # a run cut short still leaves its table
    text = report(out)
    (out / "report.md").write_text(text + "\n")
    print(f"\n{text}\n\n({time.perf_counter() - t0:.0f} s in all; table saved to {out / 'report.md'})")
    if args.write_doc:
        write_section(Path(args.write_doc), args.section, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
