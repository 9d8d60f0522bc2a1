"""Every ```python block in README.md and docs/*.md runs as written.

A block that needs an optional extra or hardware can be skipped by putting
``<!-- docs-test: skip REASON -->`` on the line just before its opening fence; the reason is reported.
Blocks run in a fresh namespace with a temporary working directory; keep them small (a few seconds).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*(.*?)\s*-->")
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)


def _blocks() -> list[tuple[str, int, str, str | None]]:
    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            skip = SKIP.search(before)
            out.append((str(path.relative_to(ROOT)), line, match.group(1), skip.group(1) if skip else None))
    return out


BLOCKS = _blocks()


@pytest.mark.parametrize(("page", "line", "code", "skip"), BLOCKS, ids=[f"{b[0]}:{b[1]}" for b in BLOCKS])
def test_code_block_runs(page, line, code, skip, tmp_path, monkeypatch):
    if skip is not None:
        pytest.skip(f"{page}:{line}: {skip or 'marked docs-test: skip'}")
    monkeypatch.chdir(tmp_path)
    # line numbers in tracebacks point into the page
    exec(compile("\n" * line + code, f"{ROOT / page}", "exec"), {"__name__": "__docs__"})  # noqa: S102
