"""The multi-agent losses compile with ``fullgraph=True`` (no graph break) and match eager outputs."""

from __future__ import annotations

import pytest

from ._cases import CASES
from .test_losses_contract import _compiled_matches

QUICK = ["mappo", "qmix"]
MARL = ["mappo", "mappo_popart", "ippo", "qmix", "vdn"]
MARL_CASES = [c for c in CASES if c.name in MARL]


@pytest.mark.parametrize("name", QUICK)
def test_compiled_matches_eager(name: str) -> None:
    _compiled_matches([c for c in MARL_CASES if c.name == name][0])


@pytest.mark.slow
@pytest.mark.parametrize("name", [c.name for c in MARL_CASES if c.name not in QUICK])
def test_compiled_matches_eager_slow(name: str) -> None:
    _compiled_matches([c for c in MARL_CASES if c.name == name][0])
