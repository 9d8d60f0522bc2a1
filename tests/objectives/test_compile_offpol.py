"""CrossQ, TQC, BC and RND compile with ``fullgraph=True`` (no graph break) and match eager."""

from __future__ import annotations

import pytest

from ._cases import CASES
from .test_losses_contract import _compiled_matches

# Compiling an ensemble loss takes minutes on a shared CPU: CrossQ, TQC and the stochastic BC compile in
# test_losses_contract.py's slow test_compiled_matches_eager_all, which covers every contract case.
FAST = ["bc_deterministic", "rnd"]


@pytest.mark.parametrize("name", FAST)
def test_compiled_matches_eager(name: str) -> None:
    _compiled_matches(next(c for c in CASES if c.name == name))
