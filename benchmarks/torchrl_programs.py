"""Run TorchRL's own tutorial scripts on tdrl after the import swap; table in ``docs/migrating-from-torchrl.md``.

The scripts are TorchRL's (``tutorials/sphinx-tutorials/*.py`` of pytorch/rl) and stay outside this repository:
``--programs DIR`` (default ``$TORCHRL_PROGRAMS`` or ``/work/torchrl_programs``) holds them verbatim, with
``DIR/sources.json`` mapping each file name to the pytorch/rl commit it was taken from.

For each ``DIR/*.py`` the harness

1. rewrites ``torchrl`` to ``tdrl`` in import statements only (``from torchrl.envs import X``,
   ``import torchrl.envs as e``; a bare ``import torchrl`` / ``import torchrl.envs`` becomes an import of the
   ``tdrl`` module bound to the name ``torchrl``, so ``torchrl.__version__`` and ``torchrl.envs.X`` in the
   program body still resolve, to tdrl) -- ``--backend torchrl`` runs the file unchanged on TorchRL 0.14.1;
2. applies the tiny-budget overrides of ``benchmarks/torchrl_programs_overrides.toml`` (regex replacements of
   budget constants and environment variables, nothing else);
3. runs it in a subprocess (``MPLBACKEND=Agg``, a timeout, a scratch working directory) and records pass/fail
   with the first error: exception type and message, and the last traceback frame inside the library.

Results are kept per backend in ``benchmarks/torchrl_programs_results.json``; ``--write-doc`` writes the table
(file | source commit | TorchRL 0.14.1 | tdrl | first tdrl error) between the markers below in the migration doc.

    python benchmarks/torchrl_programs.py --backend both --write-doc
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "migrating-from-torchrl.md"
OVERRIDES = ROOT / "benchmarks" / "torchrl_programs_overrides.toml"
RESULTS = ROOT / "benchmarks" / "torchrl_programs_results.json"
DEFAULT_PROGRAMS = Path(os.environ.get("TORCHRL_PROGRAMS", "/work/torchrl_programs"))
TORCHRL_PYTHON = Path.home() / ".cache" / "torchrl-anchor-venv" / "bin" / "python"
START = "<!-- torchrl-programs:start -->"
END = "<!-- torchrl-programs:end -->"
LIBRARY = {"tdrl": "tdrl", "torchrl": "torchrl"}

_FROM = re.compile(r"^(\s*from\s+)torchrl(?=[\s.])")
_IMPORT = re.compile(r"^(\s*import\s+)(.+)$")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')


def _swap_import_names(names: str) -> tuple[str, bool]:
    """Rewrite the comma list of an ``import`` statement; say whether a bare ``torchrl[.x]`` was imported."""
    out, bare = [], False
    for part in names.split(","):
        stripped = part.strip()
        match = re.fullmatch(r"torchrl((?:\.\w+)*)(\s+as\s+\w+)?", stripped)
        if match is None:
            out.append(stripped)
        elif match.group(2):
            out.append(f"tdrl{match.group(1)}{match.group(2)}")
        elif match.group(1):
            out.append(f"tdrl{match.group(1)}")
            bare = True
        else:
            out.append("tdrl as torchrl")
    return ", ".join(out), bare


def rewrite_imports(source: str) -> str:
    """``torchrl`` -> ``tdrl`` in the import statements of ``source``; every other line is left as it is.

    A bare ``import torchrl.envs`` binds ``torchrl`` to ``tdrl`` too (``import tdrl.envs; import tdrl as torchrl``)
    so that ``torchrl.envs.GymEnv`` in the body still resolves.
    """
    lines = []
    for line in source.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        end = line[len(body):]
        if _FROM.match(body):
            body = _FROM.sub(r"\1tdrl", body)
        else:
            match = _IMPORT.match(body)
            if match and re.search(r"\btorchrl\b", match.group(2)):
                code, sep, comment = match.group(2).partition("#")
                names, bare = _swap_import_names(code)
                body = f"{match.group(1)}{names}" + ("; import tdrl as torchrl" if bare else "")
                body += f"  {sep}{comment}" if sep else ""
        lines.append(body + end)
    return "".join(lines)


def load_overrides(path: Path) -> dict[str, dict]:
    """The per-file overrides: ``{file: {"replace": [{"pattern", "repl"}], "env": {name: value}, "timeout"}}``."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text())
    files = data.get("files", {})
    for name, entry in files.items():
        unknown = set(entry) - {"replace", "env", "timeout", "note"}
        if unknown:
            raise ValueError(f"{path}: [files.{name!r}] has unknown keys {sorted(unknown)}; "
                             "expected replace, env, timeout, note")
        for rule in entry.get("replace", []):
            if set(rule) != {"pattern", "repl"}:
                raise ValueError(f"{path}: [files.{name!r}] replace rule {rule} must have exactly pattern and repl")
    return files


def apply_overrides(source: str, entry: dict, name: str = "<program>") -> str:
    """Apply the ``replace`` rules of one override entry; a pattern that matches nothing is an error (stale)."""
    for rule in entry.get("replace", []):
        source, count = re.subn(rule["pattern"], rule["repl"], source, flags=re.M)
        if count == 0:
            raise ValueError(f"override pattern {rule['pattern']!r} for {name} matches nothing: "
                             "the program changed, update benchmarks/torchrl_programs_overrides.toml")
    return source


def first_error(stderr: str, library: str = "tdrl") -> str:
    """``Type: message`` of the last traceback in ``stderr``, with the last frame inside ``library`` (or program)."""
    start = stderr.rfind("Traceback (most recent call last):")
    if start < 0:
        tail = [line for line in stderr.strip().splitlines() if line.strip()]
        return tail[-1].strip() if tail else "no traceback"
    block = stderr[start:].splitlines()[1:]
    frames, exc_lines = [], []
    for i, line in enumerate(block):
        match = _FRAME.match(line)
        if match:
            frames.append(match)
        elif frames and line and not line.startswith(" ") and not line.startswith("\t"):
            exc_lines = [line]
            for extra in block[i + 1:]:
                if extra.startswith(("Traceback", "During handling", "The above exception")) or not extra.strip():
                    break
                exc_lines.append(extra)
            break
    message = " ".join(part.strip() for part in exc_lines) or "no exception line"
    message = re.sub(r"/[^\s'\"()]*/site-packages/", "", message)  # no machine-specific paths in the table
    if len(message) > 300:
        message = message[:297] + "..."
    marker = f"/{library}/"
    inside = [f for f in frames if marker in f.group("path").replace("\\", "/")]
    where = inside[-1] if inside else (frames[-1] if frames else None)
    if where is None:
        return message
    path = where.group("path").replace("\\", "/")
    if marker in path:
        path = library + "/" + path.rsplit(marker, 1)[1]
    else:
        path = Path(path).name
    return f"{message} (at {path}:{where.group('line')} in {where.group('func').strip()})"


@dataclass
class Result:
    file: str
    backend: str
    passed: bool
    seconds: float
    error: str


def prepare(source: str, backend: str, entry: dict, name: str) -> str:
    """The program text that runs: imports swapped for tdrl, then the budget overrides."""
    if backend == "tdrl":
        source = rewrite_imports(source)
    return apply_overrides(source, entry, name)


def run_program(path: Path, backend: str, entry: dict, timeout: float, python: Path) -> Result:
    text = prepare(path.read_text(), backend, entry, path.name)
    env = dict(os.environ)
    env.update({"MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"})
    env.update({k: str(v) for k, v in entry.get("env", {}).items()})
    if backend == "tdrl":
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    else:
        env.pop("PYTHONPATH", None)
    timeout = float(entry.get("timeout", timeout))
    with tempfile.TemporaryDirectory(prefix=f"torchrl_program_{backend}_") as tmp:
        script = Path(tmp) / path.name
        script.write_text(text)
        start = dt.datetime.now()
        try:
            proc = subprocess.run([str(python), script.name], cwd=tmp, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            seconds = (dt.datetime.now() - start).total_seconds()
            return Result(path.name, backend, False, seconds, f"timeout after {timeout:.0f} s")
        seconds = (dt.datetime.now() - start).total_seconds()
    if proc.returncode == 0:
        return Result(path.name, backend, True, seconds, "")
    return Result(path.name, backend, False, seconds,
                  first_error(proc.stderr, LIBRARY[backend]) or f"exit code {proc.returncode}")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")


def render_section(results: dict, sources: dict[str, str], command: str) -> str:
    """The markdown section (markers included) from ``results = {backend: {"date", "files": {file: Result}}}``."""
    runs = [results[b] for b in ("tdrl", "torchrl") if b in results]
    files = sorted(set().union(*(set(r["files"]) for r in runs)) if runs else set())
    tdrl = results.get("tdrl", {}).get("files", {})
    ref = results.get("torchrl", {}).get("files", {})

    def state(entry: dict | None) -> str:
        if entry is None:
            return "not run"
        return "runs" if entry["passed"] else "**fails**"

    n_tdrl = sum(bool(tdrl.get(f, {}).get("passed")) for f in files)
    n_ref = sum(bool(ref.get(f, {}).get("passed")) for f in files)
    lines = [
        START,
        "## TorchRL's own tutorials, run on tdrl after the import swap",
        "",
        "Generated by `benchmarks/torchrl_programs.py`; do not edit by hand. Each TorchRL tutorial "
        "(`tutorials/sphinx-tutorials/` of pytorch/rl, at the commit shown; the scripts are not part of this "
        "repository) is run with `torchrl` replaced by `tdrl` in its imports only, with the tiny-budget overrides "
        "of `benchmarks/torchrl_programs_overrides.toml` (frame counts, iterations; never logic). The *TorchRL "
        "0.14.1* column runs the same file unchanged on TorchRL 0.14.1 here: a file that fails there too (a "
        "newer-than-0.14.1 API, a missing dependency) is not a tdrl gap. A tutorial is taken at the commit shown, "
        "which may be older or newer than TorchRL 0.14.1: an API it uses that 0.14.1 no longer (or not yet) has "
        "fails on both.",
        "",
        f"Command: `{command}`. "
        + "; ".join(f"{b} run on {results[b]['date']}" for b in ("torchrl", "tdrl") if b in results) + ".",
        "",
        f"Runs on tdrl: {n_tdrl}/{len(files)}; runs on TorchRL 0.14.1: {n_ref}/{len(files)}.",
        "",
        "| file | source commit | TorchRL 0.14.1 | tdrl | first tdrl error |",
        "|---|---|---|---|---|",
    ]
    for f in files:
        commit = sources.get(f, "")
        shown = f"[`{commit[:10]}`](https://github.com/pytorch/rl/blob/{commit}/tutorials/sphinx-tutorials/{f})" \
            if commit else "unknown"
        t, r = tdrl.get(f), ref.get(f)
        error = _cell(t["error"]) if t and not t["passed"] else ""
        if r and not r["passed"]:
            error += ("<br>" if error else "") + f"(TorchRL 0.14.1: {_cell(r['error'])})"
        lines.append(f"| `{f}` | {shown} | {state(r)} | {state(t)} | {error} |")
    lines.append(END)
    return "\n".join(lines)


def replace_section(doc_text: str, section: str) -> str:
    """Put ``section`` between the markers of ``doc_text``; without markers, before ``## Every name`` (or last)."""
    if START in doc_text and END in doc_text:
        head, rest = doc_text.split(START, 1)
        tail = rest.split(END, 1)[1]
        return head + section + tail
    anchor = "## Every name"
    if anchor in doc_text:
        head, tail = doc_text.split(anchor, 1)
        return head + section + "\n\n" + anchor + tail
    return doc_text.rstrip("\n") + "\n\n" + section + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=Path, default=DEFAULT_PROGRAMS)
    parser.add_argument("--backend", choices=["tdrl", "torchrl", "both"], default="tdrl")
    parser.add_argument("--only", nargs="*", default=None, help="file names to run (default: every DIR/*.py)")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--overrides", type=Path, default=OVERRIDES)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--torchrl-python", type=Path, default=TORCHRL_PYTHON)
    parser.add_argument("--write-doc", action="store_true")
    parser.add_argument("--doc", type=Path, default=DOC)
    args = parser.parse_args(argv)
    if not args.programs.is_dir():
        raise SystemExit(f"--programs {args.programs} is not a folder: fetch TorchRL's tutorials there first")
    overrides = load_overrides(args.overrides)
    paths = sorted(p for p in args.programs.glob("*.py") if args.only is None or p.name in args.only)
    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    sources_path = args.programs / "sources.json"
    if sources_path.exists():
        results.setdefault("sources", {}).update(json.loads(sources_path.read_text()))
    backends = ["torchrl", "tdrl"] if args.backend == "both" else [args.backend]
    for backend in backends:
        python = Path(sys.executable) if backend == "tdrl" else args.torchrl_python
        store = results.setdefault(backend, {"date": "", "files": {}})
        for path in paths:
            result = run_program(path, backend, overrides.get(path.name, {}), args.timeout, python)
            print(f"[{backend}] {path.name}: {'pass' if result.passed else 'FAIL'} ({result.seconds:.0f} s) "
                  f"{result.error}", flush=True)
            store["files"][path.name] = asdict(result)
        if paths:
            store["date"] = dt.date.today().isoformat()
    args.results.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    if args.write_doc:
        sources = results.get("sources", {})
        command = "python benchmarks/torchrl_programs.py --backend both --write-doc"
        args.doc.write_text(replace_section(args.doc.read_text(), render_section(results, sources, command)))
        print(f"wrote {args.doc}")


if __name__ == "__main__":
    main()
