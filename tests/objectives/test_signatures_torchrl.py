"""tdrl's loss constructors and helpers take TorchRL 0.14.1's arguments, in TorchRL's positional order,
with TorchRL's defaults (recorded in ``torchrl_0_14_1_signatures.json`` by ``record_torchrl_signatures.py``).

Every difference is either fixed or listed in ``ALLOWED`` with its reason; an entry that no longer
matches a difference fails too, so the list stays accurate.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .record_torchrl_signatures import TARGETS, resolve, signature_of

FIXTURE = json.loads(Path(__file__).with_name("torchrl_0_14_1_signatures.json").read_text())["signatures"]

# (target, parameter) -> why tdrl differs on purpose.
ALLOWED: dict[tuple[str, str], str] = {
    # TorchRL collects unknown keyword arguments here only to raise on the removed ``convert_to_functional``
    # options; tdrl's signature takes none, so a typo raises TypeError at the call.
    ("objectives.LossModule.convert_to_functional", "kwargs"): "no removed options to intercept",
}


def _differences(target: str, ref: list[dict], mine: list[dict]) -> dict[str, str]:
    """``{parameter: what differs}``; ``"<positional>"`` for a different positional order."""
    diffs: dict[str, str] = {}
    positional = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
    ref_pos = [p["name"] for p in ref if p["kind"] in positional]
    my_pos = [p["name"] for p in mine if p["kind"] in positional]
    if ref_pos != my_pos:
        diffs["<positional>"] = f"TorchRL takes {ref_pos} positionally, tdrl {my_pos}"
    ref_by, my_by = {p["name"]: p for p in ref}, {p["name"]: p for p in mine}
    for name, p in ref_by.items():
        q = my_by.get(name)
        if q is None:
            diffs[name] = f"missing in tdrl ({p['kind']}, default {p['default']})"
        elif p["kind"] != q["kind"] and not (p["kind"] in positional and q["kind"] in positional):
            diffs[name] = f"kind {q['kind']}, TorchRL {p['kind']}"
        elif p["default"] != q["default"]:
            diffs[name] = f"default {q['default']}, TorchRL {p['default']}"
    for name in my_by.keys() - ref_by.keys():
        diffs[name] = f"not a TorchRL argument ({my_by[name]['kind']})"
    return diffs


@pytest.mark.parametrize("module,attr", TARGETS, ids=[f"{m}.{a}" for m, a in TARGETS])
def test_signature_matches_torchrl(module: str, attr: str) -> None:
    target = f"{module}.{attr}"
    obj, method = resolve("tdrl", module, attr)
    diffs = _differences(target, FIXTURE[target], signature_of(obj, method))
    unexplained = {k: v for k, v in diffs.items() if (target, k) not in ALLOWED}
    assert not unexplained, f"{target} differs from TorchRL 0.14.1: {unexplained}"
    stale = [k for (t, k) in ALLOWED if t == target and k not in diffs]
    assert not stale, f"ALLOWED lists {stale} for {target}, which no longer differ"


def test_fixture_covers_every_target() -> None:
    assert sorted(FIXTURE) == sorted(f"{m}.{a}" for m, a in TARGETS)
