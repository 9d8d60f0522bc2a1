"""DiffusionBCLoss, ACTLoss and ExponentialQuadraticCost compile with ``fullgraph=True`` (no graph break) and
match eager with the same random draws; the DiffusionActor's reverse chain compiles too."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type

from ._cases import CASES
from ._cases_imitation import diffusion_loss
from .test_losses_contract import _compiled_matches


@pytest.mark.parametrize("name", ["diffusion_bc", "exponential_quadratic_cost"])
def test_compiled_matches_eager(name: str) -> None:
    _compiled_matches(next(c for c in CASES if c.name == name))


# Minutes on a shared CPU (a Transformer CVAE; a reverse chain unrolled over every step): slow runs only.
@pytest.mark.slow
def test_act_compiled_matches_eager() -> None:
    _compiled_matches(next(c for c in CASES if c.name == "act"))


@pytest.mark.slow
@pytest.mark.parametrize("mode", [InteractionType.RANDOM, InteractionType.DETERMINISTIC])
def test_diffusion_actor_compiles(mode: InteractionType) -> None:
    torch._inductor.config.fallback_random = True
    torch._dynamo.reset()
    actor = diffusion_loss().get_stateful_net("actor_network")
    td = TensorDict(observation=torch.randn(4, 3), batch_size=[4])
    compiled = torch.compile(actor, fullgraph=True)
    with set_interaction_type(mode):
        torch.manual_seed(0)
        eager = actor(td.clone())["action"]
        torch.manual_seed(0)
        out = compiled(td.clone())["action"]
    torch.testing.assert_close(out, eager, rtol=1e-4, atol=1e-5)
