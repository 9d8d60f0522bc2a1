"""Fixtures for the LLM env tests: the in-process tiny tokenizer and the local GSM8K-style records."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def tokenizer():
    pytest.importorskip("transformers", reason="the LLM tests need the `llm` extra (transformers)")
    from _tiny import tiny_tokenizer

    return tiny_tokenizer()


@pytest.fixture(scope="session")
def gsm8k_records() -> list[dict]:
    return json.loads((HERE / "gsm8k_records.json").read_text())
