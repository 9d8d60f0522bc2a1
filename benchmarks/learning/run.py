"""Learning benchmark: trains presets for N seeds the way ``tdrl train`` does and writes ``docs/results.md``.

Usage::

    python benchmarks/learning/run.py ppo_cartpole --seeds 0 1 2      # one preset, three seeds
    python benchmarks/learning/run.py all --seeds 0                    # every gated preset, seed 0
    python benchmarks/learning/run.py --render-only --update-headers   # table, figures, preset headers

Each run goes through the public training path of ``tdrl train`` (``compose_run_config`` -> ``build_run`` ->
``train_built_run``) with the preset as shipped (``--override KEY=VALUE`` is for experiments: those rows go to
``RUNS_DIR/experiments.json``, never into the docs), then evaluates the *last* policy deterministically over ``--episodes``
episodes. The row of each (preset, seed) replaces the stored one in ``docs/results/results.json``; the
table, the per-preset learning-curve PNGs (mean and spread over seeds) and, with ``--update-headers``, the
``# Measured`` lines of the preset YAML headers are regenerated from all stored rows.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import gymnasium
import torch
from omegaconf import OmegaConf

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from results_table import (  # noqa: E402 - the sibling module, found through the path set above
    GATES,
    first_reach,
    load_rows,
    merge_rows,
    min_in_last_fraction,
    plot_preset,
    render_markdown,
    save_rows,
    update_header,
)

import tdrl  # noqa: E402
from tdrl.record import load_curve  # noqa: E402
from tdrl.trainers.algorithms.configs import compose_run_config  # noqa: E402
from tdrl.trainers.algorithms.configs.presets import PRESETS_DIR  # noqa: E402
from tdrl.trainers.run import build_run, evaluate_run, train_built_run  # noqa: E402
from tdrl.trainers.run_parts import load_run_config  # noqa: E402

DOCS = ROOT / "docs"
#: the curve each run records, first one present: the periodic deterministic evaluation, else training returns
CURVE_KEYS = ("r_eval_periodic", "r_episode")


def machine() -> str:
    """The CPU model, core count and load average: the figures depend on them."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return f"{os.cpu_count()} cores {model}, {torch.get_num_threads()} torch thread(s), load average {load}"


def versions() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=False).stdout.strip()
    except OSError:
        commit = ""
    return (f"tdrl {tdrl.__version__}{f' @ {commit}' if commit else ''}, torch {torch.__version__}, "
            f"gymnasium {gymnasium.__version__}, python {platform.python_version()}")


def _curve(run_dir: Path) -> tuple[str, dict[str, list[float]]]:
    for key in CURVE_KEYS:
        curve = load_curve(run_dir, key=key)
        if curve["frames"]:
            return key, curve
    return CURVE_KEYS[0], {"frames": [], "value": [], "wall_time": []}


def summarise(preset: str, seed: int, run_dir: Path, summary: dict[str, Any], *, episodes: int,
              overrides: list[str]) -> dict[str, Any]:
    """The result row of a finished run folder: last-policy return, threshold crossing, speed, context."""
    mean, std, returns = evaluate_run(run_dir, episodes=episodes, policy="last")
    key, curve = _curve(run_dir)
    gate = GATES.get(preset)
    reached, reached_s = first_reach(curve, gate.threshold) if gate else (None, None)
    phases = summary.get("time_per_phase_s", {})
    return {
        "preset": preset, "seed": seed, "algo": summary["algo"], "env": summary["env"],
        "frames": int(summary["frames"]), "final_return": round(mean, 2), "final_return_std": round(std, 2),
        "eval_episodes": len(returns), "frames_to_threshold": reached,
        "time_to_threshold_s": round(reached_s, 1) if reached_s is not None else None,
        "tail_min": min_in_last_fraction(curve, int(summary["frames"])) if key == "r_eval_periodic" else None,
        "wall_time_s": float(summary["wall_time_s"]), "frames_per_s": float(summary["frames_per_s"]),
        "time_split_s": {k: round(float(v), 1) for k, v in sorted(phases.items(), key=lambda kv: -kv[1])[:4]},
        "curve_key": key, "curve": curve, "overrides": overrides, "machine": machine(), "versions": versions(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
    }


def train_one(preset: str, seed: int, *, runs_dir: Path, overrides: list[str], episodes: int) -> dict[str, Any]:
    """Trains ``preset`` with ``seed`` through ``tdrl train``'s path and returns its result row."""
    run_dir = runs_dir / f"{preset}-seed{seed}"
    if run_dir.exists():
        raise FileExistsError(f"{run_dir} exists: remove it or pick another --runs-dir")
    cfg = compose_run_config([f"preset={preset}", f"seed={seed}", f"run_dir={run_dir}", *overrides])
    t0 = time.perf_counter()
    summary = train_built_run(build_run(cfg, progress_bar=False), cfg)
    print(f"{preset} seed {seed}: {summary['frames']} frames in {time.perf_counter() - t0:.0f} s", flush=True)
    return summarise(preset, seed, run_dir, summary, episodes=episodes, overrides=overrides)


def adopt(preset: str, run_dir: Path, *, episodes: int) -> dict[str, Any]:
    """The row of a finished ``tdrl train`` run folder whose config is the shipped preset's (seed and folder aside).

    Lets a run started with ``tdrl train preset=NAME`` count without training it again; any other difference
    from the preset as shipped is refused.
    """
    saved = load_run_config(run_dir)
    seed = int(saved.seed)
    shipped = compose_run_config([f"preset={preset}", f"seed={seed}", f"run_dir={saved.run_dir}"])
    mine, theirs = OmegaConf.to_container(saved), OmegaConf.to_container(shipped)
    for cfg in (mine, theirs):  # display only: a run without a progress bar trains the same
        cfg.get("trainer", {}).pop("progress_bar", None)
    diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    if diff:
        raise ValueError(f"{run_dir}: its config differs from preset {preset!r} in {diff}; train it again instead")
    summary = json.loads((run_dir / "summary.json").read_text())
    return summarise(preset, seed, run_dir, summary, episodes=episodes, overrides=[])


def render(rows: list[dict[str, Any]], *, out: Path, headers: bool) -> None:
    """Writes the table and the figures (and the preset headers) from all rows."""
    figures: dict[str, str] = {}
    for preset in sorted({r["preset"] for r in rows}):
        runs = [r for r in rows if r["preset"] == preset]
        png = out.parent / "results" / f"{preset}.png"
        plot_preset(preset, runs, png)
        figures[preset] = os.path.relpath(png, out.parent)
        yaml = PRESETS_DIR / f"{preset}.yaml"
        if headers and yaml.exists():
            yaml.write_text(update_header(yaml.read_text(), preset, runs))
    measured = {r["preset"] for r in rows}
    for preset in sorted(set(GATES) - measured) if headers else []:  # the gate, and that it is not measured yet
        yaml = PRESETS_DIR / f"{preset}.yaml"
        yaml.write_text(update_header(yaml.read_text(), preset, []))
    out.write_text(render_markdown(rows, figures=figures))
    print(f"wrote {out}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", help=f"preset names or 'all' ({', '.join(GATES)})")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--episodes", type=int, default=10, help="evaluation episodes of the last policy (>= 10)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="config override (experiments only: rows go to RUNS_DIR/experiments.json)")
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "runs" / "benchmarks")
    parser.add_argument("--out", type=Path, default=DOCS / "results.md")
    parser.add_argument("--adopt", type=Path, nargs="+", default=[], metavar="RUN_DIR",
                        help="record finished `tdrl train preset=PRESET` run folders instead of training (one preset)")
    parser.add_argument("--render-only", action="store_true", help="train nothing: regenerate from stored rows")
    parser.add_argument("--update-headers", action="store_true", help="rewrite the presets' '# Measured' lines")
    args = parser.parse_args(argv)
    if args.episodes < 10:
        parser.error(f"--episodes must be >= 10, got {args.episodes}")
    presets = list(GATES) if args.presets == ["all"] else args.presets
    unknown = [p for p in presets if not (PRESETS_DIR / f"{p}.yaml").exists()]
    if unknown:
        parser.error(f"unknown preset(s) {unknown}; presets: {sorted(p.stem for p in PRESETS_DIR.glob('*.yaml'))}")
    if not presets and not args.render_only:
        parser.error("name a preset (or 'all'), or pass --render-only")
    # Rows trained with overrides are experiments: they go beside the run folders, never into the docs.
    store = args.runs_dir / "experiments.json" if args.override else args.out.parent / "results" / "results.json"
    torch.set_num_threads(1)
    if args.adopt:
        if len(presets) != 1:
            parser.error("--adopt takes the run folders of one preset: name exactly one")
        rows = [adopt(presets[0], d, episodes=args.episodes) for d in args.adopt]
        save_rows(store, merge_rows(load_rows(store), rows))
        args.render_only = True
    for preset in [] if args.render_only else presets:
        for seed in args.seeds:
            row = train_one(preset, seed, runs_dir=args.runs_dir, overrides=args.override, episodes=args.episodes)
            # stored after every run, so that a long sweep killed half way keeps what it measured
            save_rows(store, merge_rows(load_rows(store), [row]))
            print(f"{preset} seed {seed}: last policy {row['final_return']:.1f} +- {row['final_return_std']:.1f}",
                  flush=True)
    if args.override:
        print(f"experiment rows in {store} (docs/results.md is left as it is)")
        return 0
    render(load_rows(store), out=args.out, headers=args.update_headers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
