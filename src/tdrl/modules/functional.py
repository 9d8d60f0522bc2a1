"""Element-wise value-scaling functions (symlog, signed hyperbolic) and their inverses.

Each function returns ``value`` times its derivative at the origin where ``value == 0``, so the gradient at
zero is the true one (``sign`` alone would give zero there).
"""

from __future__ import annotations

import torch

__all__ = ["symlog", "symexp", "signed_hyperbolic", "signed_parabolic"]


def symlog(value: torch.Tensor) -> torch.Tensor:
    """``sign(x) * log(1 + |x|)`` (DreamerV3, https://arxiv.org/abs/2301.04104).

    Args:
        value: input tensor.

    Returns:
        The transformed tensor.

    Examples:
        >>> symlog(torch.tensor([-100.0, 0.0, 100.0]))
        tensor([-4.6151,  0.0000,  4.6151])
    """
    return torch.where(value == 0, value, value.sign() * value.abs().log1p())


def symexp(value: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`symlog`: ``sign(y) * (exp(|y|) - 1)``.

    Args:
        value: input tensor in symlog space.

    Returns:
        The transformed tensor.

    Examples:
        >>> symexp(symlog(torch.tensor([-100.0, 0.0, 100.0])))
        tensor([-100.0000,    0.0000,  100.0000])
    """
    return torch.where(value == 0, value, value.sign() * value.abs().expm1())


def _check_epsilon(epsilon: float) -> None:
    if epsilon <= 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}.")


def signed_hyperbolic(value: torch.Tensor, epsilon: float = 1e-3) -> torch.Tensor:
    """``sign(x) (sqrt(|x| + 1) - 1) + eps x`` (Pohlen et al., 2018, https://arxiv.org/abs/1805.11593).

    Args:
        value: input tensor.
        epsilon: positive linear term keeping the inverse Lipschitz. Defaults to ``1e-3``.

    Returns:
        The transformed tensor.

    Examples:
        >>> signed_hyperbolic(torch.tensor([-100.0, 0.0, 100.0]))
        tensor([-9.1499,  0.0000,  9.1499])
    """
    _check_epsilon(epsilon)
    transformed = value.sign() * ((value.abs() + 1).sqrt() - 1) + epsilon * value
    return torch.where(value == 0, value * (0.5 + epsilon), transformed)


def signed_parabolic(value: torch.Tensor, epsilon: float = 1e-3) -> torch.Tensor:
    """Inverse of :func:`signed_hyperbolic`.

    Solving the quadratic in ``sqrt(|x| + 1)`` gives ``|x| = r^2 - 1`` with
    ``r = (sqrt(1 + 4 eps (|y| + 1 + eps)) - 1) / (2 eps)``, computed as ``2 (|y| + 1 + eps) / (d + 1)`` to
    avoid cancellation for small ``eps``.

    Args:
        value: input tensor in signed-hyperbolic space.
        epsilon: the ``epsilon`` of the forward transform. Defaults to ``1e-3``.

    Returns:
        The transformed tensor.

    Examples:
        >>> signed_parabolic(signed_hyperbolic(torch.tensor([-100.0, 0.0, 100.0])))
        tensor([-100.0000,    0.0000,  100.0000])
    """
    _check_epsilon(epsilon)
    shifted = value.abs() + 1 + epsilon
    root = 2 * shifted / ((1 + 4 * epsilon * shifted).sqrt() + 1)
    return torch.where(value == 0, value / (0.5 + epsilon), value.sign() * (root.square() - 1))
