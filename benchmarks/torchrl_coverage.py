"""Which of TorchRL 0.14.1's public names tdrl provides: writes ``docs/migrating-from-torchrl.md``.

Two steps, each in its own interpreter:

1. ``<torchrl python> benchmarks/torchrl_coverage.py dump`` lists the ``__all__`` of TorchRL's public modules
   into ``benchmarks/torchrl_0_14_1_names.json`` (names only).
2. ``python benchmarks/torchrl_coverage.py report`` (tdrl's venv) checks each ``torchrl.X:name`` as
   ``tdrl.X:name`` and writes the table, with the allow-list ``benchmarks/torchrl_coverage_allowlist.toml``
   (names not provided, each with the reason).

``python benchmarks/torchrl_coverage.py all --torchrl-python PATH`` runs both (the dump in a subprocess).
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import json
import subprocess
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
NAMES = ROOT / "benchmarks" / "torchrl_0_14_1_names.json"
ALLOW = ROOT / "benchmarks" / "torchrl_coverage_allowlist.toml"
DOC = ROOT / "docs" / "migrating-from-torchrl.md"
DEFAULT_TORCHRL_PYTHON = Path.home() / ".cache" / "torchrl-anchor-venv" / "bin" / "python"

MODULES = [
    "torchrl", "torchrl.envs", "torchrl.envs.transforms", "torchrl.envs.libs", "torchrl.envs.utils",
    "torchrl.envs.llm", "torchrl.envs.model_based", "torchrl.data", "torchrl.data.datasets", "torchrl.data.map",
    "torchrl.data.llm", "torchrl.data.replay_buffers", "torchrl.modules", "torchrl.modules.models",
    "torchrl.modules.distributions", "torchrl.modules.tensordict_module", "torchrl.modules.llm",
    "torchrl.modules.planners", "torchrl.modules.inference_server", "torchrl.objectives",
    "torchrl.objectives.value", "torchrl.objectives.llm", "torchrl.objectives.multiagent", "torchrl.collectors",
    "torchrl.collectors.distributed", "torchrl.collectors.llm", "torchrl.weight_update", "torchrl.record",
    "torchrl.record.loggers", "torchrl.trainers", "torchrl.trainers.helpers", "torchrl.trainers.algorithms",
    "torchrl.trainers.algorithms.configs", "torchrl.checkpoint", "torchrl.render", "torchrl.services",
]


def dump(out: Path) -> None:
    """Runs under TorchRL's interpreter: ``{module: sorted(__all__)}`` plus the TorchRL version."""
    import torchrl

    warnings.simplefilter("ignore")
    names: dict[str, list[str]] = {}
    for module in MODULES:
        mod = importlib.import_module(module)
        names[module] = sorted(set(getattr(mod, "__all__", [])))
    out.write_text(json.dumps({"torchrl": torchrl.__version__, "modules": names}, indent=1, sort_keys=True) + "\n")


def _load_allow(path: Path) -> list[tuple[str, str]]:
    entries = tomllib.loads(path.read_text()).get("entry", [])
    for entry in entries:
        if not entry.get("reason"):
            raise ValueError(f"{path}: allow-list entry {entry.get('pattern')!r} has no reason")
    return [(e["pattern"], e["reason"]) for e in entries]


def _reason(allow: list[tuple[str, str]], module: str, name: str) -> str | None:
    qualified = f"{module}:{name}"
    for pattern, reason in allow:
        if fnmatch.fnmatchcase(qualified, pattern):
            return reason
    return None


def _provided(module: str, name: str, cache: dict[str, object]) -> bool:
    target = "tdrl" + module[len("torchrl"):]
    if target not in cache:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cache[target] = importlib.import_module(target)
        except Exception:  # noqa: BLE001 - a module that fails to import provides nothing
            cache[target] = None
    mod = cache[target]
    if mod is None:
        return False
    try:
        return hasattr(mod, name)
    except Exception:  # noqa: BLE001 - a lazy attribute that fails to build is not provided
        return False


def classify(names: dict[str, list[str]], allow: list[tuple[str, str]]) -> dict[str, dict[str, str]]:
    """``{module: {name: "provided" | "allowed: <reason>" | "missing"}}``."""
    cache: dict[str, object] = {}
    out: dict[str, dict[str, str]] = {}
    for module, module_names in names.items():
        out[module] = {}
        for name in module_names:
            if _provided(module, name, cache):
                out[module][name] = "provided"
            else:
                reason = _reason(allow, module, name)
                out[module][name] = f"allowed: {reason}" if reason else "missing"
    return out


def _distinct(status: dict[str, dict[str, str]]) -> dict[str, str]:
    """Per distinct name: provided at every TorchRL path > allow-listed > missing somewhere."""
    per_name: dict[str, list[str]] = defaultdict(list)
    for module_status in status.values():
        for name, state in module_status.items():
            per_name[name].append(state)
    result = {}
    for name, states in per_name.items():
        if all(s == "provided" for s in states):
            result[name] = "provided"
        elif all(s == "provided" or s.startswith("allowed") for s in states):
            result[name] = next(s for s in states if s.startswith("allowed"))
        else:
            result[name] = "missing"
    return result


def render(status: dict[str, dict[str, str]], version: str) -> str:
    distinct = _distinct(status)
    n = len(distinct)
    provided = sum(s == "provided" for s in distinct.values())
    allowed = sum(s.startswith("allowed") for s in distinct.values())
    installable = n - allowed
    lines = [
        "# Migrating from TorchRL: which public names tdrl provides",
        "",
        f"Generated by `benchmarks/torchrl_coverage.py` from TorchRL {version}'s `__all__` lists "
        "(`benchmarks/torchrl_0_14_1_names.json`) and the tdrl tree it runs on; do not edit by hand.",
        "A name is *provided* when `tdrl.X` has it wherever `torchrl.X` exports it; *allow-listed* names are not "
        "provided for the reason given in `benchmarks/torchrl_coverage_allowlist.toml`. The counts are those of the "
        "tree the script ran on: regenerate (`python benchmarks/torchrl_coverage.py report`) after changing the API.",
        "",
        "## Summary",
        "",
        "| | names |",
        "|---|---:|",
        f"| distinct public names in TorchRL {version} | {n} |",
        f"| provided by tdrl | {provided} ({100 * provided / max(n, 1):.1f}%) |",
        f"| allow-listed (dependency that cannot install here, GPU/cluster-only) | {allowed} |",
        f"| missing | {n - provided - allowed} |",
        f"| provided, of the names whose dependencies install here | {provided}/{installable} "
        f"({100 * provided / max(installable, 1):.1f}%) |",
        "",
        "## Per module",
        "",
        "| TorchRL module | names | provided | allow-listed | missing |",
        "|---|---:|---:|---:|---:|",
    ]
    for module, module_status in status.items():
        states = list(module_status.values())
        p = sum(s == "provided" for s in states)
        a = sum(s.startswith("allowed") for s in states)
        lines.append(f"| `{module}` | {len(states)} | {p} | {a} | {len(states) - p - a} |")
    lines += ["", "## Every name", ""]
    for module, module_status in status.items():
        lines += [f"### `{module}`", "", "| name | status |", "|---|---|"]
        for name, state in module_status.items():
            shown = "provided" if state == "provided" else ("**missing**" if state == "missing" else state)
            lines.append(f"| `{name}` | {shown} |")
        lines.append("")
    return "\n".join(lines)


KEPT_SECTIONS = [("<!-- torchrl-programs:start -->", "<!-- torchrl-programs:end -->")]


def keep_sections(old: str, new: str) -> str:
    """``new`` with the sections other generators wrote into ``old`` (between their markers) put back.

    ``benchmarks/torchrl_programs.py`` writes its table between markers in the same doc; a kept section goes
    back before ``## Every name``.
    """
    for start, end in KEPT_SECTIONS:
        if start in old and end in old and start not in new:
            section = start + old.split(start, 1)[1].split(end, 1)[0] + end
            head, anchor, tail = new.partition("## Every name")
            new = (head + section + "\n\n" + anchor + tail) if anchor else new.rstrip("\n") + "\n\n" + section + "\n"
    return new


def report(names_path: Path, allow_path: Path, doc: Path) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    data = json.loads(names_path.read_text())
    status = classify(data["modules"], _load_allow(allow_path))
    doc.write_text(keep_sections(doc.read_text() if doc.exists() else "", render(status, data["torchrl"]) + "\n"))
    distinct = _distinct(status)
    provided = sum(s == "provided" for s in distinct.values())
    print(f"{provided}/{len(distinct)} distinct TorchRL names provided; wrote {doc}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["dump", "report", "all"])
    parser.add_argument("--names", type=Path, default=NAMES)
    parser.add_argument("--allow-list", type=Path, default=ALLOW)
    parser.add_argument("--out", type=Path, default=DOC)
    parser.add_argument("--torchrl-python", type=Path, default=DEFAULT_TORCHRL_PYTHON)
    args = parser.parse_args()
    if args.step == "dump":
        dump(args.names)
    elif args.step == "report":
        report(args.names, args.allow_list, args.out)
    else:
        subprocess.run([str(args.torchrl_python), __file__, "dump", "--names", str(args.names)], check=True)
        report(args.names, args.allow_list, args.out)


if __name__ == "__main__":
    main()
