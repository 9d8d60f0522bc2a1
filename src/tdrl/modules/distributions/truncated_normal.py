"""Normal distribution truncated to ``[low, high]`` (Burkardt, "The Truncated Normal Distribution").

Reference: https://people.sc.fsu.edu/~jburkardt/presentations/truncated_normal.pdf
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import distributions as D
from torch.distributions import constraints

from tdrl.modules.distributions.continuous import check_bounds, resolve_scale
from tdrl.modules.distributions.utils import as_tensor_on

__all__ = ["TruncatedNormal"]

_INV_SQRT_2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_LOG_SQRT_2PI_E = 0.5 * math.log(2 * math.pi * math.e)
_EPS = 1e-6  # keeps CDF values and samples strictly inside (0, 1) / (low, high)


def _phi(x: torch.Tensor) -> torch.Tensor:
    return (-0.5 * x**2).exp() * _INV_SQRT_2PI


def _big_phi(x: torch.Tensor) -> torch.Tensor:
    return (0.5 * (1 + (x * _INV_SQRT_2).erf())).clamp(_EPS, 1 - _EPS)


class _ElementwiseTruncatedNormal(D.Distribution):
    """Element-wise truncated Normal (no event dimension)."""

    has_rsample = True
    arg_constraints: dict = {}

    def __init__(self, loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> None:
        self.loc, self.scale, self.low, self.high = torch.broadcast_tensors(loc, scale.clamp_min(_EPS), low, high)
        a = (self.low - self.loc) / self.scale
        b = (self.high - self.loc) / self.scale
        self._a, self._b = a, b
        phi_a, phi_b = _phi(a), _phi(b)
        self._cdf_a = _big_phi(a)
        z = (_big_phi(b) - self._cdf_a).clamp(_EPS, 1 - _EPS)
        self._z = z
        self._log_z = z.log()
        self._log_scale = self.scale.log()
        # Standardised moments of the truncated standard normal.
        std_mean = (phi_a - phi_b) / z
        lp = (phi_b * b - phi_a * a) / z
        self._mean = std_mean * self.scale + self.loc
        self._variance = (1 - lp - std_mean**2) * self.scale**2
        self._entropy = _LOG_SQRT_2PI_E + self._log_z - 0.5 * lp + self._log_scale
        super().__init__(self.loc.shape, validate_args=False)

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> torch.Tensor:
        return self._mean

    @property
    def variance(self) -> torch.Tensor:
        return self._variance

    def entropy(self) -> torch.Tensor:
        return self._entropy

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        return ((_big_phi((value - self.loc) / self.scale) - self._cdf_a) / self._z).clamp(0, 1)

    def icdf(self, value: torch.Tensor) -> torch.Tensor:
        p = (self._cdf_a + value * self._z).clamp(_EPS, 1 - _EPS)
        x = math.sqrt(2) * (2 * p - 1).erfinv() * self.scale + self.loc
        # Clamp the value into the support but keep the pathwise gradient of the unclamped sample.
        clamped = torch.maximum(torch.minimum(x, self.high), self.low)
        return x + (clamped - x).detach()

    def rsample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        u = torch.empty(shape, dtype=self.loc.dtype, device=self.loc.device).uniform_(_EPS, 1 - _EPS)
        return self.icdf(u)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        x = (value - self.loc) / self.scale
        return math.log(_INV_SQRT_2PI) - self._log_z - 0.5 * x**2 - self._log_scale


class TruncatedNormal(D.Independent):
    """A Normal truncated to ``[low, high]``, independent over the last dimension.

    Values outside ``[low, high]`` get ``log_prob = -inf``; values on the boundary are scored just inside it.

    Args:
        loc: location of the (untruncated) Normal.
        scale: its standard deviation (clamped below at ``1e-6``); tensor, number or callable of ``loc``.
        upscale: ``a`` in ``loc = a * tanh(loc / a)`` when ``tanh_loc=True``. Defaults to ``5.0``.
        low: lower bound. Defaults to ``-1.0``.
        high: upper bound. Defaults to ``1.0``.
        tanh_loc: bound the location with a scaled tanh.

    Examples:
        >>> import torch
        >>> dist = TruncatedNormal(torch.zeros(4, 2), torch.ones(4, 2))
        >>> sample = dist.rsample()
        >>> bool(((sample >= -1) & (sample <= 1)).all()), dist.log_prob(sample).shape
        (True, torch.Size([4]))
    """

    num_params = 2
    arg_constraints = {"loc": constraints.real, "scale": constraints.greater_than(1e-6)}

    def __init__(
        self,
        loc: torch.Tensor,
        scale: torch.Tensor,
        upscale: torch.Tensor | float = 5.0,
        low: torch.Tensor | float = -1.0,
        high: torch.Tensor | float = 1.0,
        tanh_loc: bool = False,
    ) -> None:
        check_bounds(low, high, name="TruncatedNormal", error=RuntimeError)
        self.tanh_loc = tanh_loc
        self.upscale = upscale
        self.device = loc.device
        self.low = as_tensor_on(low, loc)
        self.high = as_tensor_on(high, loc)
        self.update(loc, scale)

    def update(self, loc: torch.Tensor, scale: torch.Tensor) -> None:
        """Sets new parameters.

        Args:
            loc: new location.
            scale: new scale.
        """
        if self.tanh_loc:
            loc = (loc / self.upscale).tanh() * self.upscale
        self.loc = loc
        self.scale = resolve_scale(scale, loc)
        base = _ElementwiseTruncatedNormal(loc, self.scale, self.low, self.high)
        super().__init__(base, 1, validate_args=False)

    @property
    def min(self) -> torch.Tensor:
        return self.low

    @property
    def max(self) -> torch.Tensor:
        return self.high

    def _clamp_inside(self, value: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(value, self.high - _EPS), self.low + _EPS)

    @property
    def mode(self) -> torch.Tensor:
        return self._clamp_inside(self.base_dist.loc)

    @property
    def deterministic_sample(self) -> torch.Tensor:
        return self.mean

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        outside = ((value < self.low) | (value > self.high)).any(-1)
        lp = super().log_prob(self._clamp_inside(value))
        return lp.masked_fill(outside, float("-inf"))
