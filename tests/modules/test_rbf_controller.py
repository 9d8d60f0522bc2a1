"""RBFController's moment matching against Monte Carlo estimates (values against TorchRL in
tests/objectives/test_golden_torchrl_imitation.py)."""

from __future__ import annotations

import pytest
import torch

from tdrl.modules import RBFController


def _policy(ctrl: RBFController, x: torch.Tensor) -> torch.Tensor:
    d2 = ((x.unsqueeze(-2) - ctrl.centers) / ctrl.lengthscales).pow(2).sum(-1)
    return torch.exp(-0.5 * d2) @ ctrl.weights


def test_moments_match_monte_carlo() -> None:
    """The RBF network's moments are exact (the squashing after it is a Gaussian approximation, tested below)."""
    torch.manual_seed(0)
    ctrl = RBFController(3, 2, max_action=None, n_basis=6).double()
    with torch.no_grad():
        ctrl.weights.mul_(10)
    mean = torch.tensor([0.2, -0.1, 0.3], dtype=torch.float64)
    root = torch.randn(3, 3, dtype=torch.float64) * 0.3
    cov = root @ root.T + 0.05 * torch.eye(3, dtype=torch.float64)
    am, ac, cc = (t.detach() for t in ctrl(mean, cov))
    x = torch.distributions.MultivariateNormal(mean, cov).sample((400_000,))
    u = _policy(ctrl, x).detach()
    torch.testing.assert_close(am, u.mean(0), atol=3e-3, rtol=0)
    torch.testing.assert_close(ac, torch.cov(u.T), atol=3e-3, rtol=0)
    cross = ((x - mean).unsqueeze(-1) * (u - u.mean(0)).unsqueeze(-2)).mean(0)
    # The third output is PILCO's S^-1 cov(x, u).
    torch.testing.assert_close(cov @ cc, cross, atol=3e-3, rtol=0)


def test_squash_sin_is_exact_for_gaussian_inputs() -> None:
    torch.manual_seed(1)
    mean = torch.tensor([0.4, -0.7], dtype=torch.float64)
    cov = torch.tensor([[0.3, 0.1], [0.1, 0.2]], dtype=torch.float64)
    bound = torch.tensor([1.0, 0.5], dtype=torch.float64)
    m, s, c = RBFController.squash_sin(mean, cov, bound)
    x = torch.distributions.MultivariateNormal(mean, cov).sample((400_000,))
    y = bound * torch.sin(x)
    torch.testing.assert_close(m, y.mean(0), atol=3e-3, rtol=0)
    torch.testing.assert_close(s, torch.cov(y.T), atol=3e-3, rtol=0)
    cross = ((x - mean).unsqueeze(-1) * (y - y.mean(0)).unsqueeze(-2)).mean(0)
    torch.testing.assert_close(cov @ c, cross, atol=3e-3, rtol=0)


def test_bad_shapes_are_named() -> None:
    ctrl = RBFController(3, 1, max_action=1.0)
    with pytest.raises(ValueError, match=r"expected mean \[..., 3\] and covariance"):
        ctrl(torch.randn(2, 3), torch.randn(2, 3))
