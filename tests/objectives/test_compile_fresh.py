"""A loss compiled before any eager call works: nothing is created inside the traced first call."""

import torch

from ._cases import CASES


def test_fresh_clip_ppo_compiles_and_computes_the_advantage():
    case = next(c for c in CASES if c.name == "clip_ppo")
    loss, td = case.make(), case.data()
    td = td.exclude("advantage", "value_target")  # the loss must run its value estimator
    eager = case.make()
    eager.load_state_dict(loss.state_dict())
    out = torch.compile(loss, fullgraph=True)(td.clone())
    ref = eager(td.clone())
    torch.testing.assert_close(out["loss_critic"], ref["loss_critic"], rtol=1e-4, atol=1e-5)
