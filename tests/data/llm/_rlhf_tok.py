"""A saved tiny tokenizer folder for the loaders (``tokenizer_model_name=<folder>`` loads it offline)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    pytest.importorskip("transformers", reason="the RLHF loaders need the `llm` extra (transformers)")
    from _tiny import tiny_tokenizer

    from ._rlhf_records import gpt2_like

    path = tmp_path_factory.mktemp("tiny-tok")
    gpt2_like(tiny_tokenizer()).save_pretrained(path)  # right padding, as GPT-2's
    return str(path)
