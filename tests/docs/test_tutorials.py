"""Every tutorial in docs/tutorials runs with the CI budget, and its rendered page shows its current code."""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

import pytest

TUTORIALS = Path(__file__).resolve().parents[2] / "docs" / "tutorials"
sys.path.insert(0, str(TUTORIALS))
import render  # noqa: E402  (docs/tutorials/render.py: the page writer)

SCRIPTS = render.tutorials()
# The optional extras a tutorial imports: without them it is skipped, with the extra named.
EXTRAS = {"11_llm_grpo": ("llm", ["transformers", "tokenizers"]), "12_going_to_ray": ("distributed", ["ray"])}


def test_there_are_tutorials():
    assert SCRIPTS, "no tutorial found in docs/tutorials"


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_tutorial_runs(script, monkeypatch, capsys):
    extra, modules = EXTRAS.get(script.stem, ("", []))
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{script.name} needs {missing}: install the {extra!r} extra")
    monkeypatch.setenv("TDRL_TUTORIAL_TINY", "1")
    runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.strip(), f"{script.name} printed nothing"


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_rendered_page_is_current(script):
    page = script.with_suffix(".md")
    assert page.is_file(), f"{page.name} missing: python docs/tutorials/render.py {script.stem}"
    text = page.read_text()
    _, cells = render.split(script)
    stale = [c.code.splitlines()[0] for c in cells if c.code and f"```python\n{c.code}\n```" not in text]
    assert not stale, f"{page.name} is stale (cells starting {stale}): python docs/tutorials/render.py {script.stem}"
    assert "```text" in text, f"{page.name} shows no output"
