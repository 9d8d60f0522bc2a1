"""ACTModel: shapes over batch dimensions, the prior mode, input checks (values against TorchRL in
tests/objectives/test_golden_torchrl_imitation.py)."""

from __future__ import annotations

import pytest
import torch

from tdrl.modules.models import ACTModel


def _model() -> ACTModel:
    return ACTModel(3, 2, 4, hidden_dim=8, nheads=2, num_encoder_layers=1, num_decoder_layers=1, latent_dim=4)


def test_shapes_with_several_batch_dims() -> None:
    pred, mu, log_var = _model()(torch.randn(2, 5, 3), torch.randn(2, 5, 4, 2))
    assert pred.shape == (2, 5, 4, 2) and mu.shape == log_var.shape == (2, 5, 4)


def test_prior_mode_returns_independent_zeros() -> None:
    pred, mu, log_var = _model()(torch.randn(5, 3))
    assert pred.shape == (5, 4, 2)
    mu.add_(1.0)
    assert log_var.eq(0).all()


def test_posterior_depends_on_the_chunk() -> None:
    model = _model().eval()
    obs = torch.randn(5, 3)
    _, mu_a, _ = model(obs, torch.randn(5, 4, 2))
    _, mu_b, _ = model(obs, torch.randn(5, 4, 2))
    assert not torch.allclose(mu_a, mu_b)


def test_bad_shapes_are_named() -> None:
    with pytest.raises(ValueError, match="observation's last dim is 4, expected 3"):
        _model()(torch.randn(5, 4))
    with pytest.raises(ValueError, match=r"action_chunk ends with \(3, 2\)"):
        _model()(torch.randn(5, 3), torch.randn(5, 3, 2))
    with pytest.raises(ValueError, match="hidden_dim must be even"):
        ACTModel(3, 2, 4, hidden_dim=7, nheads=1)
