from __future__ import annotations

import pytest
import torch

from tdrl.modules.distributions.utils import safeatanh, safetanh


def test_safetanh_eps_matches_torchrl_values():
    # Recorded on TorchRL 0.14.1: safetanh(x, 1e-3) and safeatanh(y, 1e-3) (eps is positional there).
    x = torch.tensor([-100.0, -1.0, 0.0, 0.5, 100.0])
    expected = torch.tensor([-0.9990000128746033, -0.7615941762924194, 0.0, 0.46211716532707214,
                             0.9990000128746033])
    assert torch.allclose(safetanh(x, 1e-3), expected)
    y = torch.tensor([-1.0, 0.0, 0.9995, 1.0])
    assert torch.allclose(safeatanh(y, 1e-3), torch.tensor([-3.8002076148986816, 0.0, 3.8002076148986816,
                                                           3.8002076148986816]))


def test_default_eps_is_the_dtype_resolution_and_bad_eps():
    assert safetanh(torch.tensor(50.0)) < 1
    assert safeatanh(torch.tensor(1.0)).isfinite()
    with pytest.raises(ValueError, match="eps"):
        safetanh(torch.zeros(1), 1.5)
