"""DTLoss (a GPT-2 trunk) and GAILLoss compile with ``fullgraph=True`` (no graph break) and match
eager; GAIL's gradient penalty calls ``torch.autograd.grad`` and says so when compiled."""

from __future__ import annotations

import pytest
import torch

from ._cases import CASES
from .test_losses_contract import _compiled_matches

# OnlineDTLoss compiles in test_losses_contract.py's slow test_compiled_matches_eager_all (minutes on a shared CPU).
FAST = ["dt", "gail"]


@pytest.mark.parametrize("name", FAST)
def test_compiled_matches_eager(name: str) -> None:
    _compiled_matches(next(c for c in CASES if c.name == name))


def test_gail_grad_penalty_is_eager_only() -> None:
    case = next(c for c in CASES if c.name == "gail_gp")
    assert case.compiled == "eager"
    torch._dynamo.reset()
    with pytest.raises(Exception, match="eagerly only"):
        torch.compile(case.make(), fullgraph=True)(case.data())
