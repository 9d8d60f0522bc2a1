"""The examples of docs/llm_envs.md run as written."""

from __future__ import annotations

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "llm_envs.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_doc_example_runs(i):
    exec(compile(BLOCKS[i], f"{DOC.name}[{i}]", "exec"), {})  # noqa: S102
