"""Numerically safe tanh / atanh helpers and distribution capability queries."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import torch
from torch import distributions as D
from torch.distributions import kl as _kl

__all__ = [
    "safetanh",
    "safeatanh",
    "tanh_log_abs_det_jacobian",
    "has_analytic_entropy",
    "has_analytic_kl",
    "as_tensor_on",
]

_LOG2 = math.log(2.0)


def _limit(dtype: torch.dtype, eps: float | None = None) -> float:
    # One resolution step below 1: tanh saturates to exactly 1.0 in float32 for |x| > ~9.
    if eps is None:
        return 1.0 - torch.finfo(dtype).resolution
    if not 0.0 < eps < 1.0:
        raise ValueError(f"eps must be in (0, 1), got {eps}")
    return 1.0 - eps


def safetanh(x: torch.Tensor, eps: float | None = None) -> torch.Tensor:
    """``tanh(x)`` clamped to ``±(1 - eps)`` so that ``atanh`` of the result stays finite.

    The gradient is that of ``tanh`` (``1 - tanh(x)^2``), also where the clamp is active.

    Args:
        x: pre-activation.
        eps: distance kept from ±1 (TorchRL's positional ``eps``); default: the dtype's resolution.

    Returns:
        The clamped ``tanh(x)``.

    Examples:
        >>> import torch
        >>> bool(safetanh(torch.tensor(20.0)) < 1)
        True
    """
    y = x.tanh()
    lim = _limit(x.dtype, eps)
    return y + (y.clamp(-lim, lim) - y).detach()


def safeatanh(y: torch.Tensor, eps: float | None = None) -> torch.Tensor:
    """``atanh`` of ``y`` clamped to ``±(1 - eps)``: finite for ``|y| >= 1``.

    The gradient is ``1 / (1 - clamp(y)^2)`` (a straight-through clamp), never zero or infinite.

    Args:
        y: a value in ``[-1, 1]``.
        eps: distance kept from ±1 (TorchRL's positional ``eps``); default: the dtype's resolution.

    Returns:
        ``atanh(clamp(y))``.

    Examples:
        >>> import torch
        >>> bool(safeatanh(torch.tensor(1.0)).isfinite())
        True
    """
    lim = _limit(y.dtype, eps)
    return (y + (y.clamp(-lim, lim) - y).detach()).atanh()


def tanh_log_abs_det_jacobian(x: torch.Tensor) -> torch.Tensor:
    """``log|d tanh(x)/dx| = log(1 - tanh(x)^2)``, computed stably as ``2 (log 2 - x - softplus(-2x))``.

    Args:
        x: pre-activation.

    Returns:
        The element-wise log-Jacobian.

    Examples:
        >>> import torch
        >>> x = torch.tensor([0.0, 3.0])
        >>> torch.allclose(tanh_log_abs_det_jacobian(x), (1 - x.tanh() ** 2).log())
        True
    """
    return 2.0 * (_LOG2 - x - torch.nn.functional.softplus(-2.0 * x))


def as_tensor_on(value: Any, like: torch.Tensor) -> torch.Tensor:
    """Returns ``value`` as a tensor on the device (and, for numbers, the dtype) of ``like``.

    Args:
        value: a number, a sequence or a tensor.
        like: the reference tensor.

    Returns:
        A tensor.

    Examples:
        >>> import torch
        >>> as_tensor_on(2, torch.zeros(1, dtype=torch.float64)).dtype
        torch.float64
    """
    if isinstance(value, torch.Tensor):
        return value if value.device == like.device else value.to(like.device)
    dtype = like.dtype if like.is_floating_point() else None
    return torch.as_tensor(value, device=like.device, dtype=dtype)


def is_number(value: Any) -> bool:
    """True for Python numbers (not tensors).

    Args:
        value: anything.

    Returns:
        Whether ``value`` is a plain number.

    Examples:
        >>> is_number(1.0), is_number(torch.ones(1))
        (True, False)
    """
    return isinstance(value, Number)


def has_analytic_entropy(dist: D.Distribution) -> bool:
    """Whether ``dist.entropy()`` has a closed form (otherwise losses estimate it by sampling).

    Args:
        dist: a distribution instance.

    Returns:
        ``True`` if calling ``entropy()`` works.

    Examples:
        >>> import torch
        >>> has_analytic_entropy(D.Normal(torch.zeros(1), torch.ones(1)))
        True
    """
    try:
        dist.entropy()
    except NotImplementedError:
        return False
    return True


def has_analytic_kl(p: D.Distribution, q: D.Distribution) -> bool:
    """Whether ``torch.distributions.kl_divergence(p, q)`` has a registered closed form.

    ``Independent`` pairs (same reinterpreted dims) and ``TransformedDistribution`` pairs (same transforms)
    are decided by their base distributions, so the answer never requires calling the KL.

    Args:
        p: the first distribution.
        q: the second distribution.

    Returns:
        ``True`` if a closed form is registered for the pair.

    Examples:
        >>> import torch
        >>> normal = D.Normal(torch.zeros(2), torch.ones(2))
        >>> has_analytic_kl(normal, normal), has_analytic_kl(normal, D.Cauchy(torch.zeros(2), torch.ones(2)))
        (True, False)
    """
    if isinstance(p, D.Independent) and isinstance(q, D.Independent):
        return (p.reinterpreted_batch_ndims == q.reinterpreted_batch_ndims
                and has_analytic_kl(p.base_dist, q.base_dist))
    if isinstance(p, D.TransformedDistribution) and isinstance(q, D.TransformedDistribution):
        return (p.transforms == q.transforms and p.event_shape == q.event_shape
                and has_analytic_kl(p.base_dist, q.base_dist))
    # The wrapper rules above are the only registered entries for Independent / TransformedDistribution.
    wrappers = (D.Independent, D.TransformedDistribution)
    return any(
        issubclass(type(p), type_p) and issubclass(type(q), type_q)
        for type_p, type_q in _kl._KL_REGISTRY
        if not (issubclass(type_p, wrappers) or issubclass(type_q, wrappers))
    )
