"""DreamerModelLoss and DreamerValueLoss compile without graph breaks and give the eager numbers.

The RSSM draws its noise at each step; inductor does not keep the order of those draws, so the model loss is
compared with the draws replaced by a fixed offset (the contract suite compares the sampled run's shapes).
"""

from __future__ import annotations

import copy

import pytest
import torch

import tdrl.modules.models.model_based as model_based

from ._cases import CASES, losses_of


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dreamer_model", "dreamer_value"])
def test_compiled_matches_eager_fixed_noise(name: str, monkeypatch) -> None:
    monkeypatch.setattr(model_based, "_sample", lambda mean, std, noise: mean + 0.3 * std)
    torch._dynamo.reset()
    case = next(c for c in CASES if c.name == name)
    loss, td = case.make(), case.data()
    twin = copy.deepcopy(loss)
    eager = losses_of(loss(td.clone()))
    compiled = losses_of(torch.compile(twin, fullgraph=True)(td.clone()))
    for key in eager.keys():
        torch.testing.assert_close(compiled[key], eager[key], msg=key, rtol=1e-4, atol=1e-5)
    compiled[next(iter(compiled.keys()))].sum().backward()
