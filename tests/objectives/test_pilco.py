"""ExponentialQuadraticCost against a Monte Carlo estimate, its keys and errors; KLAdaptiveLR's checks and
state; add_random_module's effect on vmap randomness."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from tdrl.objectives import DQNLoss, ExponentialQuadraticCost, KLAdaptiveLR, add_random_module


def test_expected_cost_matches_monte_carlo() -> None:
    torch.manual_seed(0)
    mean = torch.tensor([0.3, -0.2], dtype=torch.float64)
    cov = torch.tensor([[0.4, 0.1], [0.1, 0.3]], dtype=torch.float64)
    target = torch.tensor([0.5, 0.5], dtype=torch.float64)
    weights = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64)
    cost = ExponentialQuadraticCost(target, weights).expected_cost(mean, cov)
    x = torch.distributions.MultivariateNormal(mean, cov).sample((400_000,))
    d = x - target
    mc = (1 - torch.exp(-0.5 * torch.einsum("ni,ij,nj->n", d, weights, d))).mean()
    torch.testing.assert_close(cost, mc, atol=3e-3, rtol=0)


def test_keys_are_renamable_and_none_keeps_the_batch() -> None:
    cost = ExponentialQuadraticCost(reduction="none").set_keys(loc="m", scale="s", loss_cost="c")
    out = cost(TensorDict(m=torch.zeros(2, 3, 2), s=torch.eye(2).expand(2, 3, 2, 2) * 0.1, batch_size=[2, 3]))
    assert out.batch_size == (2, 3) and out["c"].shape == (2, 3)
    with pytest.raises(KeyError, match="'m'"):
        cost(TensorDict(s=torch.eye(2).expand(2, 2, 2), batch_size=[2]))


def test_bad_shapes_are_named() -> None:
    with pytest.raises(ValueError, match="square"):
        ExponentialQuadraticCost(weights=torch.ones(2, 3))
    td = TensorDict({("observation", "mean"): torch.zeros(4, 2), ("observation", "var"): torch.zeros(4, 2)}, [4])
    with pytest.raises(ValueError, match=r"\[..., 2, 2\] covariance"):
        ExponentialQuadraticCost()(td)


def test_kl_adaptive_lr_validates_and_round_trips() -> None:
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1e-3)
    for kwargs in ({"target_kl": 0.0}, {"target_kl": 0.01, "factor": 1.0}, {"target_kl": 0.01, "min_lr": 1.0}):
        with pytest.raises(ValueError):
            KLAdaptiveLR(opt, **kwargs)
    sched = KLAdaptiveLR(opt, 0.01)
    with pytest.raises(ValueError, match="finite"):
        sched.step(float("nan"))
    sched.step(0.5)
    other = KLAdaptiveLR(opt, 0.2, factor=3.0)
    other.load_state_dict(sched.state_dict())
    assert other.state_dict() == sched.state_dict() and other.last_kl == 0.5


class _Noise(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.randn_like(x)


def test_add_random_module_makes_vmap_randomness_different() -> None:
    def loss() -> DQNLoss:
        net = TensorDictModule(nn.Sequential(nn.Linear(3, 2), _Noise()), ["observation"], ["action_value"])
        return DQNLoss(net, action_space="one-hot")

    assert loss().vmap_randomness == "error"
    add_random_module(_Noise)
    assert loss().vmap_randomness == "different"
    with pytest.raises(TypeError, match="nn.Module subclass"):
        add_random_module(_Noise())  # type: ignore[arg-type]
