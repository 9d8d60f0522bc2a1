"""Backward linear recurrences ``y_t = b_t + c_t * y_{t+1}`` along the last dimension.

Every estimator in :mod:`tdrl.objectives.value.functional` reduces to this recurrence with ``y_T = 0``
(GAE: ``b = delta``, ``c = gamma * lmbda * (1 - done)``; TD(lambda): ``b`` folds the bootstrap values in).
Two evaluation orders are provided:

* :func:`reverse_scan_loop` walks the time steps one by one (``T`` kernel launches), the order of the
  textbook loop;
* :func:`reverse_scan` is a Hillis-Steele scan: ``ceil(log2 T)`` rounds, each composing every step with the
  one ``k`` steps ahead (``(b, c) o (b', c') = (b + c b', c c')``). It never divides by a product of
  discounts, so it cannot overflow or produce NaN when the discounts underflow to zero, and it is
  differentiable and ``torch.compile``-friendly (no ``out=``, no data-dependent control flow).
"""

from __future__ import annotations

import torch

__all__ = ["reverse_scan", "reverse_scan_loop"]


def _shifts(num_steps: int) -> list[int]:
    shifts = []
    k = 1
    while k < num_steps:
        shifts.append(k)
        k *= 2
    return shifts


def reverse_scan(b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Solves ``y_t = b_t + c_t * y_{t+1}`` (with ``y_T = 0``) for all ``t`` in ``O(log T)`` rounds.

    Large inputs are first halved a few times by pairing neighbours
    (``y_{2i} = (b_{2i} + c_{2i} b_{2i+1}) + c_{2i} c_{2i+1} y_{2i+2}``), which does ``O(T)`` work per
    halving instead of the ``O(T)`` per round of the Hillis-Steele scan that finishes the job.

    Args:
        b: the offsets, time along the last dimension (``[..., T]``).
        c: the coefficients, same shape as ``b``.

    Returns:
        ``y`` with the shape of ``b``.

    Examples:
        >>> import torch
        >>> reverse_scan(torch.ones(1, 4), torch.full((1, 4), 0.5))
        tensor([[1.8750, 1.7500, 1.5000, 1.0000]])
    """
    num_steps = b.shape[-1]
    rows = b.numel() // max(num_steps, 1)
    if num_steps <= _LOOP_MAX_STEPS or (num_steps <= _PAIRING_MIN_STEPS and rows >= _LOOP_MIN_ROWS):
        return reverse_scan_loop(b, c)
    if num_steps <= _PAIRING_MIN_STEPS or b.numel() < _PAIRING_MIN_NUMEL:
        return _hillis_steele(b, c)
    odd = num_steps % 2
    if odd:
        b = torch.nn.functional.pad(b, (0, 1))
        c = torch.nn.functional.pad(c, (0, 1))
    b_even, b_odd = b[..., 0::2], b[..., 1::2]
    c_even, c_odd = c[..., 0::2], c[..., 1::2]
    y_even = reverse_scan(torch.addcmul(b_even, c_even, b_odd), c_even * c_odd)
    y_odd = torch.addcmul(b_odd, c_odd, torch.nn.functional.pad(y_even[..., 1:], (0, 1)))
    y = torch.stack([y_even, y_odd], -1).flatten(-2)
    return y[..., :num_steps] if odd else y


# Short horizons: the plain loop is as fast as the scan; up to 64 steps with wide batches, where the
# scan's O(T log T) work shows. Measured on CPU.
_LOOP_MAX_STEPS = 16
_LOOP_MIN_ROWS = 512
# Pairing pays off once the arrays are large enough for memory traffic to dominate (measured on CPU).
_PAIRING_MIN_STEPS = 64
_PAIRING_MIN_NUMEL = 1 << 16


def _hillis_steele(b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    num_steps = b.shape[-1]
    shifts = _shifts(num_steps)
    if not shifts:
        return b
    # Zero padding of sum(shifts) steps lets each round read ``k`` steps ahead without bound checks.
    pad = sum(shifts)
    b = torch.nn.functional.pad(b, (0, pad))
    c = torch.nn.functional.pad(c, (0, pad))
    last = len(shifts) - 1
    if b.numel() <= _ROLL_MAX_NUMEL:
        # Tiny inputs are launch-bound: one ``roll`` per operand beats two slices. The wrapped-around
        # entries only pollute the padding (positions >= T), never the first T steps.
        for i, k in enumerate(shifts):
            new_b = torch.addcmul(b, c, torch.roll(b, -k, -1))
            if i < last:
                c = c * torch.roll(c, -k, -1)
            b = new_b
        return b[..., :num_steps]
    # Every round shortens the arrays by ``k``, so exactly ``T`` steps are left after the last one.
    length = num_steps + pad
    for i, k in enumerate(shifts):
        head = length - k
        new_b = torch.addcmul(b[..., :head], c[..., :head], b[..., k:length])
        if i < last:
            c = c[..., :head] * c[..., k:length]
        b = new_b
        length = head
    return b


_ROLL_MAX_NUMEL = 4096


def reverse_scan_loop(b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Same as :func:`reverse_scan`, computed step by step from ``t = T - 1`` down to ``0``.

    Args:
        b: the offsets, time along the last dimension (``[..., T]``).
        c: the coefficients, same shape as ``b``.

    Returns:
        ``y`` with the shape of ``b``.

    Examples:
        >>> import torch
        >>> reverse_scan_loop(torch.ones(1, 4), torch.full((1, 4), 0.5))
        tensor([[1.8750, 1.7500, 1.5000, 1.0000]])
    """
    num_steps = b.shape[-1]
    if num_steps == 0:
        return b
    needs_graph = torch.is_grad_enabled() and (b.requires_grad or c.requires_grad)
    if needs_graph or torch.compiler.is_compiling():
        return _loop_functional(b, c)
    # Time-major copies make every step a contiguous row; updating y in place (one kernel per step,
    # no allocation) is ~40% faster than building a list of rows and stacking them.
    y = b.movedim(-1, 0).clone(memory_format=torch.contiguous_format)
    ys = y.unbind(0)
    cs = c.movedim(-1, 0).contiguous().unbind(0)
    for t in range(num_steps - 2, -1, -1):
        ys[t].addcmul_(cs[t], ys[t + 1])
    return y.movedim(0, -1)


def _loop_functional(b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The loop without in-place updates, for autograd and ``torch.compile``."""
    bs = b.movedim(-1, 0).unbind(0)
    cs = c.movedim(-1, 0).unbind(0)
    y = bs[-1]
    out = [y]
    for t in range(b.shape[-1] - 2, -1, -1):
        y = torch.addcmul(bs[t], cs[t], y)
        out.append(y)
    out.reverse()
    return torch.stack(out, dim=-1)
