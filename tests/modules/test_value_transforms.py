"""Tests for the value-scaling functions and value transforms."""

from __future__ import annotations

import pytest
import torch

from tdrl.modules import (
    ComposeValueTransform,
    IdentityValueTransform,
    SignedHyperbolicValueTransform,
    SymLogValueTransform,
    signed_hyperbolic,
    signed_parabolic,
    symexp,
    symlog,
)

VALUES = torch.tensor([-1e4, -100.0, -1.0, -1e-3, 0.0, 1e-3, 1.0, 100.0, 1e4], dtype=torch.float64)


@pytest.mark.parametrize("forward,inverse", [(symlog, symexp), (signed_hyperbolic, signed_parabolic)])
def test_round_trip(forward, inverse):
    torch.testing.assert_close(inverse(forward(VALUES)), VALUES)


def test_reference_values_and_gradient_at_zero():
    torch.testing.assert_close(symlog(VALUES), VALUES.sign() * VALUES.abs().log1p())
    eps = 1e-3
    ref = VALUES.sign() * ((VALUES.abs() + 1).sqrt() - 1) + eps * VALUES
    torch.testing.assert_close(signed_hyperbolic(VALUES, eps), ref)
    x = torch.zeros(1, requires_grad=True)
    symlog(x).sum().backward()
    assert x.grad.item() == 1.0
    x.grad = None
    signed_hyperbolic(x, eps).sum().backward()
    assert x.grad.item() == pytest.approx(0.5 + eps)
    with pytest.raises(ValueError, match="epsilon"):
        signed_hyperbolic(VALUES, 0.0)


def test_transform_modules():
    for transform in (IdentityValueTransform(), SymLogValueTransform(), SignedHyperbolicValueTransform(),
                      ComposeValueTransform(SymLogValueTransform(), SignedHyperbolicValueTransform(1e-2))):
        torch.testing.assert_close(transform.inverse(transform(VALUES)), VALUES)
    with pytest.raises(TypeError, match="ValueTransform"):
        ComposeValueTransform(torch.nn.Identity())
