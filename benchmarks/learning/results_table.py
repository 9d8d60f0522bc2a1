"""The returns table of ``docs/results.md``: gates, result rows, merging, rendering, curve figures, headers.

Pure functions over result rows (dicts written to ``docs/results/results.json``), so that the table and the
figures are regenerated from the stored rows, one preset at a time, without the run folders. The training
itself lives in ``run.py``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "GATES", "Gate", "first_reach", "gate_passes", "load_rows", "merge_rows", "min_in_last_fraction",
    "plot_preset", "render_markdown", "save_rows", "update_header",
]

#: marker of the generated lines in a preset's header (everything after it up to the first key is rewritten)
HEADER_MARK = "# Measured (benchmarks/learning/run.py --update-headers"


@dataclass(frozen=True)
class Gate:
    """What a preset must reach: the evaluated mean return of its last policy, within a frame budget.

    Attributes:
        threshold: the mean return (deterministic, >= 10 episodes) the last policy must reach.
        frames: the budget (the preset's ``collector.total_frames`` must not exceed it).
        no_collapse: the periodic evaluations of the last 20% of training must also stay >= ``threshold``.
        seeds_needed: how many of the seeds run must pass (of 3).
    """

    threshold: float
    frames: int
    no_collapse: bool = False
    seeds_needed: int = 2

    def describe(self) -> str:
        extra = ", and every periodic evaluation of the last 20% too" if self.no_collapse else ""
        return f"last policy >= {self.threshold:g} within {self.frames:,} frames{extra}"


#: the gates of issue #17, by preset
GATES: dict[str, Gate] = {
    "ppo_cartpole": Gate(475, 100_000),
    "dqn_cartpole": Gate(475, 100_000, no_collapse=True),
    "a2c_cartpole": Gate(475, 500_000),
    "reinforce_cartpole": Gate(475, 500_000),
    "sac_pendulum": Gate(-200, 20_000),
    "td3_pendulum": Gate(-200, 20_000),
    "ddpg_pendulum": Gate(-200, 20_000),
    "ppo_pendulum": Gate(-250, 200_000),
}


def first_reach(curve: dict[str, list[float]], threshold: float) -> tuple[int | None, float | None]:
    """Frames and wall-clock seconds at the first point of ``curve`` at or above ``threshold``.

    Examples:
        >>> first_reach({"frames": [10, 20, 30], "value": [1.0, 5.0, 9.0], "wall_time": [0.1, 0.2, 0.3]}, 5)
        (20, 0.2)
        >>> first_reach({"frames": [10], "value": [1.0], "wall_time": []}, 5)
        (None, None)
    """
    for i, (frames, value) in enumerate(zip(curve["frames"], curve["value"])):
        if value >= threshold:
            wall = curve["wall_time"][i] if curve.get("wall_time") else None
            return int(frames), wall
    return None, None


def min_in_last_fraction(curve: dict[str, list[float]], total_frames: int, fraction: float = 0.2) -> float | None:
    """Lowest value of ``curve`` over its points in the last ``fraction`` of ``total_frames``.

    Examples:
        >>> min_in_last_fraction({"frames": [20, 80, 90, 100], "value": [9.0, 3.0, 7.0, 8.0]}, 100)
        7.0
    """
    start = total_frames * (1.0 - fraction)
    tail = [v for f, v in zip(curve["frames"], curve["value"]) if f > start]
    return min(tail) if tail else None


def gate_passes(row: dict[str, Any], gate: Gate) -> bool:
    """Whether one run (a result row) meets ``gate``.

    Examples:
        >>> gate_passes({"frames": 99_840, "final_return": 500.0, "tail_min": 480.0}, GATES["dqn_cartpole"])
        True
        >>> gate_passes({"frames": 99_840, "final_return": 500.0, "tail_min": 120.0}, GATES["dqn_cartpole"])
        False
    """
    if row["frames"] > gate.frames or row["final_return"] < gate.threshold:
        return False
    if gate.no_collapse:
        return row.get("tail_min") is not None and row["tail_min"] >= gate.threshold
    return True


def _key(row: dict[str, Any]) -> tuple[str, int]:
    return str(row["preset"]), int(row["seed"])


def merge_rows(old: Iterable[dict[str, Any]], new: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of ``old`` and ``new``, a new row replacing the old one of the same preset and seed; sorted.

    Examples:
        >>> merge_rows([{"preset": "a", "seed": 0, "x": 1}, {"preset": "b", "seed": 0, "x": 2}],
        ...            [{"preset": "a", "seed": 0, "x": 3}])
        [{'preset': 'a', 'seed': 0, 'x': 3}, {'preset': 'b', 'seed': 0, 'x': 2}]
    """
    merged = {_key(r): r for r in old}
    merged.update({_key(r): r for r in new})
    return [merged[k] for k in sorted(merged)]


def load_rows(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The stored result rows (an empty list when the file does not exist yet)."""
    path = Path(path)
    if not path.exists():
        return []
    rows = json.loads(path.read_text())
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "preset" in r and "seed" in r for r in rows):
        raise ValueError(f"{path}: expected a JSON list of result rows with 'preset' and 'seed', got {type(rows)}")
    return rows


def save_rows(path: str | os.PathLike, rows: Sequence[dict[str, Any]]) -> None:
    """Writes the rows (to a temp file, then renamed: a killed run never leaves half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(list(rows), indent=1) + "\n")
    os.replace(tmp, path)


def _fmt(value: Any, spec: str = ",.0f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def _by_preset(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["preset"], []).append(row)
    return groups


def _summary_line(preset: str, runs: list[dict[str, Any]]) -> str:
    gate = GATES.get(preset)
    passed = sum(gate_passes(r, gate) for r in runs) if gate else 0
    finals = " / ".join(_fmt(r["final_return"], ".1f") for r in runs)
    verdict = ("pass" if passed >= min(gate.seeds_needed, len(runs)) and len(runs) >= gate.seeds_needed
               else f"{passed}/{len(runs)} seeds pass" if passed else "fail") if gate else "no gate"
    if gate and len(runs) < gate.seeds_needed:
        verdict = f"{passed}/{len(runs)} seeds pass (needs {gate.seeds_needed} of 3)"
    reached = [r for r in runs if r.get("frames_to_threshold") is not None]
    first = min(reached, key=lambda r: r["frames_to_threshold"]) if reached else {}
    fps = sum(r["frames_per_s"] for r in runs) / len(runs)
    return (f"| `{preset}` | {gate.describe() if gate else '-'} | {', '.join(str(r['seed']) for r in runs)} | "
            f"{finals} | {_reach(first)} | {verdict} | {fps:,.0f} |")


def _reach(row: dict[str, Any]) -> str:
    # a preset without periodic evaluation is timed on its training episodes (exploring policy)
    text = _fmt(row.get("frames_to_threshold"))
    return f"{text} (training)" if text != "-" and row.get("curve_key") == "r_episode" else text


def _run_line(row: dict[str, Any]) -> str:
    split = row.get("time_split_s", {})
    split_txt = ", ".join(f"{k} {v:.0f}" for k, v in split.items()) or "-"
    return (f"| `{row['preset']}` | {row['seed']} | {row['frames']:,} | {row['final_return']:.1f} +- "
            f"{row['final_return_std']:.1f} ({row['eval_episodes']}) | {_reach(row)} | "
            f"{_fmt(row.get('time_to_threshold_s'), '.0f')} | {_fmt(row.get('tail_min'), '.1f')} | "
            f"{row['wall_time_s']:.0f} | {row['frames_per_s']:,.0f} | {split_txt} | {row['date']} |")


def render_markdown(rows: Sequence[dict[str, Any]], *, figures: dict[str, str]) -> str:
    """``docs/results.md`` from the rows: the gate table, one row per run, the figures, the machines."""
    groups = _by_preset(rows)
    lines = [
        "# Reference results", "",
        "Generated by `python benchmarks/learning/run.py PRESET --seeds 0 1 2` (do not edit by hand: the rows live",
        "in `docs/results/results.json`, and each run replaces the row of its preset and seed). Each run trains the",
        "preset as shipped through `tdrl train`'s code path (`compose_run_config` -> `build_run` ->",
        "`train_built_run`), then evaluates the *last* policy deterministically (`evaluate_run(..., policy=\"last\")`).",
        "\"First reached\" is the first periodic evaluation (the preset's `eval.interval`) at or above the gate's",
        "threshold; \"(training)\": the preset evaluates only at the end, so it is the first training episode",
        "(exploring policy) at or above it.", "",
        "## Gates", "",
        "| preset | gate | seeds | last-policy return per seed | first reached (frames) | verdict | frames/s |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [_summary_line(p, runs) for p, runs in groups.items()]
    missing = [p for p in GATES if p not in groups]
    if missing:
        lines += ["", "Not measured yet: " + ", ".join(f"`{p}` ({GATES[p].describe()})" for p in missing) + "."]
    lines += [
        "", "## Runs", "",
        "Return: mean +- std of the last policy (evaluation episodes). Tail min: the lowest periodic evaluation",
        "in the last 20% of training. Split: seconds per phase (`time_per_phase_s` of the run's summary).", "",
        "| preset | seed | frames | return | first reached (frames) | first reached (s) | tail min | wall-clock (s) | frames/s | "
        "split (s) | date |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [_run_line(r) for r in rows]
    lines += ["", "## Learning curves", "",
              "Periodic deterministic evaluation against frames: mean over seeds, band from the lowest to the "
              "highest seed.", ""]
    lines += [f"![{p}]({figures[p]})" for p in groups if p in figures]
    machines = sorted({(r["machine"], r["versions"]) for r in rows})
    lines += ["", "## Machines and versions", ""]
    lines += [f"- {m}; {v}" for m, v in machines]
    return "\n".join(lines) + "\n"


def _interp(frames: list[float], values: list[float], grid: list[float]) -> list[float]:
    out = []
    for x in grid:
        if x <= frames[0]:
            out.append(values[0])
        elif x >= frames[-1]:
            out.append(values[-1])
        else:
            j = next(i for i, f in enumerate(frames) if f >= x)
            t = (x - frames[j - 1]) / (frames[j] - frames[j - 1])
            out.append(values[j - 1] + t * (values[j] - values[j - 1]))
    return out


def plot_preset(preset: str, runs: Sequence[dict[str, Any]], out: str | os.PathLike) -> Path:
    """The learning curve of a preset: mean over seeds and the min-max band, with the gate's threshold."""
    # matplotlib only here: the table and the merge logic work without it
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = [r["curve"] for r in runs if r.get("curve") and r["curve"]["frames"]]
    if not curves:
        raise ValueError(f"{preset}: no run has a learning curve to draw")
    low, top = min(c["frames"][0] for c in curves), max(c["frames"][-1] for c in curves)
    grid = [low + (top - low) * i / 100 for i in range(101)]
    ys = [_interp(c["frames"], c["value"], grid) for c in curves]
    mean = [sum(col) / len(col) for col in zip(*ys)]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.fill_between(grid, [min(col) for col in zip(*ys)], [max(col) for col in zip(*ys)], alpha=0.25)
    ax.plot(grid, mean, label=f"mean of {len(curves)} seed(s)")
    gate = GATES.get(preset)
    if gate:
        ax.axhline(gate.threshold, color="k", linestyle="--", linewidth=1, label=f"gate {gate.threshold:g}")
    ax.set_xlabel("frames")
    ax.set_ylabel(runs[0].get("curve_key", "return"))
    ax.set_title(f"{preset} (seeds {', '.join(str(r['seed']) for r in runs)})")
    ax.legend(loc="lower right")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".tmp.png")
    fig.savefig(tmp, dpi=80, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, out)
    return out


def update_header(text: str, preset: str, runs: Sequence[dict[str, Any]]) -> str:
    """A preset YAML's text with its generated ``# Measured ...`` header lines rewritten from ``runs``.

    The hand-written comment lines above the marker stay; the generated lines (from the marker to the first
    line that is not a comment) are replaced.

    Examples:
        >>> row = {"seed": 0, "final_return": 500.0, "frames": 99_840, "frames_to_threshold": 61_440,
        ...        "wall_time_s": 80.0, "tail_min": None}
        >>> print(update_header("# PPO\\nalgo: ppo\\n", "ppo_cartpole", [row]))
        # PPO
        # Measured (benchmarks/learning/run.py --update-headers; docs/results.md): gate: last policy >= 475 within
        #   100,000 frames. seed 0: last policy 500.0 at 99,840 frames (first reached 61,440) in 80 s.
        algo: ppo
        <BLANKLINE>
    """
    lines = text.splitlines()
    first_key = next(i for i, line in enumerate(lines) if line and not line.startswith("#"))
    start = next((i for i in range(first_key) if lines[i].startswith(HEADER_MARK)), first_key)
    gate = GATES.get(preset)
    per_seed = "Not measured yet" if not runs else "; ".join(
        f"seed {r['seed']}: last policy {r['final_return']:.1f} at {r['frames']:,} frames (first reached "
        f"{_fmt(r.get('frames_to_threshold'))}) in {r['wall_time_s']:.0f} s" for r in runs)
    body = (f"gate: {gate.describe() if gate else 'none'}. {per_seed}.")
    generated = _wrap(f"{HEADER_MARK}; docs/results.md): {body}")
    return "\n".join(lines[:start] + generated + lines[first_key:]) + "\n"


def _wrap(text: str, width: int = 110) -> list[str]:
    out: list[str] = []
    line = ""
    for word in re.split(r" ", text):
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = "#   " + word
        else:
            line = f"{line} {word}" if line else word
    out.append(line)
    return out
