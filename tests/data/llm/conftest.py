"""Fixtures for the LLM data tests: the in-process tiny tokenizer (skips without transformers)."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "envs" / "llm"))


@pytest.fixture(scope="session")
def tokenizer():
    pytest.importorskip("transformers", reason="the LLM tests need the `llm` extra (transformers)")
    from _tiny import tiny_tokenizer

    return tiny_tokenizer()
