"""The two evaluation orders of ``y_t = b_t + c_t * y_{t+1}`` against a scalar Python loop."""

from __future__ import annotations

import pytest
import torch

from tdrl.objectives.value._scan import reverse_scan, reverse_scan_loop


def _naive(b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    flat_b, flat_c = b.reshape(-1, b.shape[-1]).tolist(), c.reshape(-1, c.shape[-1]).tolist()
    out = []
    for row_b, row_c in zip(flat_b, flat_c):
        y, row = 0.0, []
        for bt, ct in zip(reversed(row_b), reversed(row_c)):
            y = bt + ct * y
            row.append(y)
        out.append(row[::-1])
    return torch.tensor(out, dtype=b.dtype).reshape(b.shape)


def _inputs(shape, p_zero=0.1):
    gen = torch.Generator().manual_seed(sum(shape))
    b = torch.randn(shape, generator=gen, dtype=torch.float64)
    c = torch.rand(shape, generator=gen, dtype=torch.float64) * (torch.rand(shape, generator=gen) > p_zero)
    return b, c


@pytest.mark.parametrize("num_steps", [1, 2, 3, 17, 64, 65, 129])
@pytest.mark.parametrize("lead", [(3,), (2, 2)])
def test_small(num_steps, lead):
    b, c = _inputs((*lead, num_steps))
    expected = _naive(b, c)
    torch.testing.assert_close(reverse_scan(b, c), expected)
    torch.testing.assert_close(reverse_scan_loop(b, c), expected)


@pytest.mark.parametrize("lead", [(1,), (40,)])
def test_medium_uses_slices(lead):
    """Both Hillis-Steele variants (rolled for tiny inputs, sliced above 4096 padded elements)."""
    b, c = _inputs((*lead, 100))
    torch.testing.assert_close(reverse_scan(b, c), _naive(b, c))


@pytest.mark.parametrize("num_steps", [300, 301])
def test_large_uses_pairing(num_steps):
    """Above 2**16 elements the scan first halves the problem (odd and even lengths)."""
    b, c = _inputs((250, num_steps))
    assert b.numel() >= 1 << 16
    expected = reverse_scan_loop(b, c)
    torch.testing.assert_close(reverse_scan(b, c), expected)
    torch.testing.assert_close(expected[:3], _naive(b[:3], c[:3]))


def test_empty_time():
    b = torch.zeros(2, 0)
    assert reverse_scan(b, b).shape == (2, 0)
    assert reverse_scan_loop(b, b).shape == (2, 0)


def test_loop_does_not_modify_inputs():
    b, c = _inputs((1, 1, 9))  # time-major view of this is already contiguous
    b0 = b.clone()
    reverse_scan_loop(b, c)
    torch.testing.assert_close(b, b0)


@pytest.mark.parametrize("fn", [reverse_scan, reverse_scan_loop])
def test_gradients(fn):
    b, c = _inputs((2, 9))
    b.requires_grad_(True)
    c.requires_grad_(True)
    assert torch.autograd.gradcheck(fn, (b, c))
