"""TorchRL 0.14.1-style LLM programs run on tdrl after the import swap (``torchrl`` -> ``tdrl``).

Each program under this folder is written with ``torchrl`` imports, as a TorchRL user would write it
(``TransformersWrapper``, ``ChatEnv``, ``DataLoadingPrimer``, ``History``, ``GRPOLoss``, ``MCAdvantage``);
the test rewrites the imports and runs it. How far the unswapped program gets on TorchRL 0.14.1 is in the
program's docstring.
"""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the llm extra (transformers) is not installed")

HERE = Path(__file__).resolve().parent


def _swapped(name: str, tmp_path: Path):  # noqa: ANN202
    source = (HERE / name).read_text()
    assert re.search(r"^from torchrl\.", source, re.M), "the program must use torchrl imports"
    swapped = re.sub(r"\btorchrl\b", "tdrl", source)
    path = tmp_path / name
    path.write_text(swapped)
    spec = importlib.util.spec_from_file_location(f"swapped_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_grpo_history_program_runs_after_the_import_swap(tmp_path: Path) -> None:
    result = _swapped("grpo_history_program.py", tmp_path).run()
    assert result["prompt_text"] == ["<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n"]
    assert result["buffer_len"] == 4
    assert result["advantage_shape"][0] == 4 and result["advantage_abs"] > 0
    assert math.isfinite(result["loss"]) and result["grad"] > 0
    # the first generated token carries its real log-prob (TorchRL 0.14.1 writes 0.0 there)
    assert result["log_probs_first"] < 0
