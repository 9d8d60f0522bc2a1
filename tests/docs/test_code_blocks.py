"""Every ```python block in README.md and docs/*.md runs as written.

A block that needs an optional extra or hardware can be skipped by putting
``<!-- docs-test: skip REASON -->`` on the line just before its opening fence; the reason is reported.
A block that reads a trained run folder says so with ``<!-- docs-test: needs-run PATH -->``: a tiny
``tdrl train`` run (trained once per session) is copied to ``PATH`` first.
Blocks run in a fresh namespace with a temporary working directory; keep them small (a few seconds).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*(.*?)\s*-->")
NEEDS_RUN = re.compile(r"<!--\s*docs-test:\s*needs-run\s+(\S+)\s*-->")
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)


def _blocks() -> list[tuple[str, int, str, str | None, str | None]]:
    out: list[tuple[str, int, str, str | None, str | None]] = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            skip = SKIP.search(before)
            run = NEEDS_RUN.search(before)
            out.append((str(path.relative_to(ROOT)), line, match.group(1), skip.group(1) if skip else None,
                        run.group(1) if run else None))
    return out


BLOCKS = _blocks()


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """A finished ``tdrl train`` run of the default preset, cut to 1,024 frames."""
    from tdrl.trainers.cli import main

    run_dir = tmp_path_factory.mktemp("docs_run") / "run"
    assert main(["train", "collector.total_frames=1024", f"run_dir={run_dir}", "--no-progress"]) == 0
    return run_dir


@pytest.mark.parametrize(("page", "line", "code", "skip", "needs_run"), BLOCKS, ids=[f"{b[0]}:{b[1]}" for b in BLOCKS])
def test_code_block_runs(page, line, code, skip, needs_run, tmp_path, monkeypatch, request):
    if skip is not None:
        pytest.skip(f"{page}:{line}: {skip or 'marked docs-test: skip'}")
    if needs_run is not None:
        shutil.copytree(request.getfixturevalue("tiny_run"), tmp_path / needs_run)
    monkeypatch.chdir(tmp_path)
    # line numbers in tracebacks point into the page
    exec(compile("\n" * line + code, f"{ROOT / page}", "exec"), {"__name__": "__docs__"})  # noqa: S102
