"""``tdrl presets``: the built-in presets, with the return and time measured in ``docs/results.md``."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from omegaconf import OmegaConf

from tdrl.trainers.algorithms.configs.presets import PRESETS_DIR, list_presets, load_yaml

__all__ = ["RESULTS_MD", "read_results", "register"]

#: the table of measured learning runs (written by benchmarks/learning/run.py); absent from an installed wheel
RESULTS_MD = Path(__file__).resolve().parents[4] / "docs" / "results.md"
_NUMBER = re.compile(r"-?[\d,]*\.?\d+")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _column(header: list[str], *words: str, avoid: str = "frames") -> int | None:
    for word in words:
        for i, cell in enumerate(header):
            if word in cell.lower() and avoid not in cell.lower():
                return i
    return None


def _number(cell: str) -> float | None:
    match = _NUMBER.search(cell)
    return float(match.group().replace(",", "")) if match else None


def read_results(text: str) -> dict[str, tuple[float | None, float | None]]:
    """Preset -> (mean return, mean wall-clock seconds) over the rows of the first markdown table with a
    ``preset``, a ``return`` and a ``wall-clock``/``time`` column.

    Examples:
        >>> read_results("| preset | seed | return | wall-clock (s) |\\n|---|---|---|---|\\n"
        ...              "| `ppo_cartpole` | 0 | 500.0 +- 0.0 (10) | 60 |\\n| `ppo_cartpole` | 1 | 480.0 | 80 |")
        {'ppo_cartpole': (490.0, 70.0)}
    """
    lines = text.splitlines()
    for start, line in enumerate(lines):
        header = [c.lower() for c in _cells(line)] if line.lstrip().startswith("|") else []
        if not header or "preset" not in header:
            continue
        ret, wall = _column(header, "return"), _column(header, "wall", "time")
        if ret is None or wall is None:
            continue
        found: dict[str, list[tuple[float | None, float | None]]] = {}
        for row in lines[start + 2:]:
            if not row.lstrip().startswith("|"):
                break
            cells = _cells(row)
            if len(cells) == len(header):
                found.setdefault(cells[header.index("preset")].strip("`"), []).append(
                    (_number(cells[ret]), _number(cells[wall])))
        return {name: tuple(  # type: ignore[misc]
            (sum(v) / len(v) if (v := [r[i] for r in rows if r[i] is not None]) else None) for i in (0, 1))
            for name, rows in found.items()}
    return {}


def _presets(args: argparse.Namespace) -> int:
    path = Path(args.results) if args.results else RESULTS_MD
    results = read_results(path.read_text()) if path.is_file() else {}
    rows = [("preset", "algo", "env", "frames", "expected return", "time")]
    for name in list_presets():
        cfg = load_yaml(PRESETS_DIR / f"{name}.yaml")
        frames = OmegaConf.select(cfg, "collector.total_frames") or OmegaConf.select(cfg, "optim.gradient_steps")
        ret, wall = results.get(name, (None, None))
        rows.append((name, str(cfg.get("algo", "ppo")), str(OmegaConf.select(cfg, "env.name")),
                     f"{frames:,}" if isinstance(frames, int) else "-", "-" if ret is None else f"{ret:.1f}",
                     "-" if wall is None else f"{wall:.0f} s"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    if not path.is_file():
        print(f"('-': {path} not found; it is written by benchmarks/learning/run.py)")
    elif len(results) < len(rows) - 1:
        print(f"('-': no measured row in {path} for that preset)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``tdrl presets``."""
    pr = sub.add_parser("presets", help="list the built-in presets with their measured return and time")
    pr.add_argument("--results", default=None, help=f"the results table to read (default: {RESULTS_MD})")
    pr.set_defaults(func=_presets)
