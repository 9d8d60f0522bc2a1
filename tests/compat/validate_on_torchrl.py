"""Run every compat program on TorchRL 0.14.1 to prove it is valid TorchRL code.

Not a test (``conftest.py`` keeps pytest from collecting it). Each program under ``programs/`` is written
against ``tdrl``; this script rewrites ``tdrl`` -> ``torchrl`` in its text and runs the result, one program at a
time, with the TorchRL reference interpreter.

Usage::

    python tests/compat/validate_on_torchrl.py [--python /path/to/torchrl/venv/bin/python] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAMS = Path(__file__).parent / "programs"
DEFAULT_PYTHON = os.path.expanduser("~/.cache/torchrl-anchor-venv/bin/python")
_WORD = re.compile(r"\btdrl\b")


def to_torchrl(source: str) -> str:
    """The program text with every ``tdrl`` module reference replaced by ``torchrl``."""
    return _WORD.sub("torchrl", source)


def run_one(python: str, path: Path, timeout: float) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / path.name
        script.write_text(to_torchrl(path.read_text()))
        env = dict(os.environ, PYTHONPATH="", OMP_NUM_THREADS="1")
        try:
            proc = subprocess.run(
                [python, str(script)], cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return False, f"timeout after {timeout}s"
    return proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="program names (default: all)")
    parser.add_argument("--python", default=DEFAULT_PYTHON)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    paths = sorted(PROGRAMS.glob("*.py"))
    if args.names:
        paths = [p for p in paths if p.stem in args.names]
    failed = []
    for path in paths:
        ok, out = run_one(args.python, path, args.timeout)
        print(f"{'PASS' if ok else 'FAIL'} {path.stem}", flush=True)
        if not ok:
            failed.append(path.stem)
            print("    " + out.replace("\n", "\n    "), flush=True)
    print(f"{len(paths) - len(failed)}/{len(paths)} programs run on TorchRL", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
