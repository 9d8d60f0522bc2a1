"""The documentation site: every page is in the nav, and (slow) ``mkdocs build --strict`` passes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _nav_pages() -> set[str]:
    # mkdocs.yml nav entries are "- Title: page.md" or "- page.md"; a plain regex avoids needing PyYAML's
    # handling of mkdocs' custom tags.
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:") :]
    return set(re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w./-]+\.md)\s*$", nav, re.M))


def test_every_page_is_in_the_nav():
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    missing = sorted(pages - _nav_pages())
    assert not missing, f"pages missing from mkdocs.yml nav: {missing}"


def test_nav_targets_exist():
    absent = sorted(p for p in _nav_pages() if not (DOCS / p).is_file())
    assert not absent, f"mkdocs.yml nav names pages that do not exist: {absent}"


@pytest.mark.slow
def test_strict_build(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is in the `docs` extra")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is in the `docs` extra")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
