"""Continuous action distributions: ``TanhNormal``, ``IndependentNormal``, ``Delta``, ``TanhDelta``.

``TanhNormal`` and ``TanhDelta`` are written directly as ``torch.distributions.Distribution`` subclasses
(not as ``TransformedDistribution`` chains): the squashing, the affine rescaling to ``[low, high]`` and the
log-Jacobian are a few fused tensor ops, which keeps them cheap and free of graph breaks under
``torch.compile`` and ``vmap``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import distributions as D
from torch.distributions import constraints
from torch.distributions.utils import _standard_normal

from tdrl.modules.distributions.param_wrapper import NormalParamWrapper
from tdrl.modules.distributions.utils import (
    as_tensor_on,
    is_number,
    safeatanh,
    safetanh,
    tanh_log_abs_det_jacobian,
)

__all__ = [
    "TanhNormal", "IndependentNormal", "Delta", "TanhDelta", "check_bounds", "resolve_scale", "same_squashing",
    "NormalParamWrapper",  # TorchRL's import path: torchrl.modules.distributions.continuous
]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
ScaleLike = torch.Tensor | float | Callable[[torch.Tensor], torch.Tensor]


def resolve_scale(scale: ScaleLike, loc: torch.Tensor) -> torch.Tensor:
    """Turns a tensor, a number or a callable of ``loc`` (e.g. ``torch.ones_like``) into a scale tensor.

    Args:
        scale: the scale specification.
        loc: the location tensor.

    Returns:
        A tensor on ``loc``'s device.

    Examples:
        >>> import torch
        >>> resolve_scale(torch.ones_like, torch.zeros(2))
        tensor([1., 1.])
    """
    if callable(scale) and not isinstance(scale, torch.Tensor):
        return scale(loc)
    return as_tensor_on(scale, loc)


def check_bounds(low: Any, high: Any, *, name: str, error: type[Exception] = ValueError) -> None:
    """Raises ``error`` unless ``high > low`` everywhere (skipped while compiling and for accelerator tensors).

    Args:
        low: lower bound(s).
        high: upper bound(s).
        name: the distribution name, for the message.
        error: the exception class to raise.

    Examples:
        >>> check_bounds(-1.0, 1.0, name="TanhNormal")
    """
    if torch.compiler.is_compiling():
        return
    if is_number(low) and is_number(high):
        ok = high > low
    elif any(isinstance(b, torch.Tensor) and b.device.type != "cpu" for b in (low, high)):
        return  # checking accelerator tensors would synchronise the device at every construction
    else:
        ok = bool((torch.as_tensor(high) > torch.as_tensor(low)).all())
    if not ok:
        raise error(f"{name}: high must be strictly greater than low everywhere, got low={low}, high={high}.")


class _SquashedMixin:
    """Shared tanh-squashing into ``[low, high]``: ``y = mid + half * tanh(x)``."""

    _affine: bool
    _mid: Any
    _half: Any
    _safe: bool

    def _set_bounds(self, low: Any, high: Any, like: torch.Tensor) -> None:
        # Python-number bounds (the common case) stay numbers: tensors are only built if `low`/`high` are read.
        self._bounds_raw = (low, high, like)
        self._bounds_tensors: tuple[torch.Tensor, torch.Tensor] | None = None
        if is_number(low) and is_number(high):
            self._affine = torch.compiler.is_compiling() or low != -1.0 or high != 1.0
            self._mid, self._half = (high + low) / 2, (high - low) / 2
            return
        # Tensor bounds always take the affine path: checking for the trivial [-1, 1] would sync the device.
        low_t, high_t = self.low, self.high
        self._affine = True
        self._mid, self._half = (high_t + low_t) / 2, (high_t - low_t) / 2

    def _tensor_bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self._bounds_tensors is None:
            low, high, like = self._bounds_raw
            self._bounds_tensors = (as_tensor_on(low, like), as_tensor_on(high, like))
        return self._bounds_tensors

    @property
    def low(self) -> torch.Tensor:
        return self._tensor_bounds()[0]

    @property
    def high(self) -> torch.Tensor:
        return self._tensor_bounds()[1]

    def _squash(self, x: torch.Tensor) -> torch.Tensor:
        y = safetanh(x) if self._safe else x.tanh()
        return y * self._half + self._mid if self._affine else y

    def _unsquash(self, y: torch.Tensor) -> torch.Tensor:
        if self._affine:
            y = (y - self._mid) / self._half
        return safeatanh(y)

    def _log_half(self) -> torch.Tensor | float:
        return math.log(self._half) if is_number(self._half) else self._half.log()

    @property
    def min(self) -> torch.Tensor:
        return self.low

    @property
    def max(self) -> torch.Tensor:
        return self.high


class TanhNormal(_SquashedMixin, D.Distribution):
    """A Normal distribution squashed by ``tanh`` and rescaled to ``[low, high]``.

    ``log_prob`` is the exact change of variables ``log N(x; loc, scale) - log|dy/dx|`` with
    ``x = atanh((y - mid) / half)``; the tanh log-Jacobian uses the stable form
    ``2 (log 2 - x - softplus(-2x))`` and the inverse clamps ``|y|`` below 1 so values on the boundary get a
    finite log-probability. A sample drawn by :meth:`rsample`/:meth:`sample` remembers its pre-tanh value, so
    ``log_prob(sample)`` scores the exact Normal draw even where ``tanh`` saturates.

    Args:
        loc: location of the underlying Normal.
        scale: its standard deviation: a tensor, a number or a callable of ``loc`` (``torch.ones_like``).
        upscale: ``a`` in ``loc = a * tanh(loc / a)`` when ``tanh_loc=True``. Defaults to ``5.0``.
        low: lower bound of the support. Defaults to ``-1.0``.
        high: upper bound of the support. Defaults to ``1.0``.
        event_dims: trailing dimensions summed in ``log_prob``. Defaults to ``min(1, loc.ndim)``.
        tanh_loc: squash the location with ``upscale * tanh(loc / upscale)`` (then shift by the mid-point).
        safe_tanh: clamp samples to ``±(1 - resolution)`` before rescaling, so they stay invertible.

    Examples:
        >>> import torch
        >>> dist = TanhNormal(torch.zeros(3, 2), torch.ones(3, 2), low=-2.0, high=2.0)
        >>> sample = dist.rsample()
        >>> sample.shape, dist.log_prob(sample).shape
        (torch.Size([3, 2]), torch.Size([3]))
        >>> dist.deterministic_sample
        tensor([[0., 0.],
                [0., 0.],
                [0., 0.]])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.greater_than(1e-6)}
    has_rsample = True
    num_params = 2

    def __init__(
        self,
        loc: torch.Tensor,
        scale: ScaleLike,
        upscale: torch.Tensor | float = 5.0,
        low: torch.Tensor | float = -1.0,
        high: torch.Tensor | float = 1.0,
        event_dims: int | None = None,
        tanh_loc: bool = False,
        safe_tanh: bool = True,
    ) -> None:
        if not isinstance(loc, torch.Tensor):
            loc = torch.as_tensor(loc, dtype=torch.get_default_dtype())
        check_bounds(low, high, name="TanhNormal", error=RuntimeError)
        self._event_dims = min(1, loc.ndim) if event_dims is None else event_dims
        self.tanh_loc = tanh_loc
        self.upscale = upscale
        self._safe = safe_tanh
        self.device = loc.device
        self._set_bounds(low, high, loc)
        self.update(loc, scale)

    def update(self, loc: torch.Tensor, scale: ScaleLike) -> None:
        """Sets new parameters in place (same semantics as the constructor).

        Args:
            loc: new location.
            scale: new scale.
        """
        if self.tanh_loc:
            loc = (loc / self.upscale).tanh() * self.upscale
            if self._affine:
                loc = loc + self._mid
        self.loc = loc
        self.scale = scale = resolve_scale(scale, loc)
        self._cache: tuple[torch.Tensor, torch.Tensor] | None = None
        n = self._event_dims
        shape = loc.shape if loc.shape == scale.shape else torch.broadcast_shapes(loc.shape, scale.shape)
        split = len(shape) - n
        super().__init__(shape[:split], shape[split:], validate_args=False)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.real

    @property
    def base_dist(self) -> D.Distribution:
        """The underlying (pre-tanh) Normal, made ``Independent`` over the event dimensions."""
        base = D.Normal(self.loc, self.scale, validate_args=False)
        return D.Independent(base, self._event_dims, validate_args=False) if self._event_dims else base

    @property
    def root_dist(self) -> D.Normal:
        """The element-wise underlying Normal."""
        return D.Normal(self.loc, self.scale, validate_args=False)

    def _normal_log_prob(self, x: torch.Tensor) -> torch.Tensor:
        return -((x - self.loc) ** 2) / (2 * self.scale**2) - self.scale.log() - _HALF_LOG_2PI

    def _log_prob_from_preimage(self, x: torch.Tensor, eps: torch.Tensor | None = None) -> torch.Tensor:
        # With the standard-normal draw `eps` at hand (reparameterised path), (x - loc) / scale == eps exactly.
        normal_lp = self._normal_log_prob(x) if eps is None else -0.5 * eps.square() - self.scale.log() - _HALF_LOG_2PI
        lp = normal_lp - tanh_log_abs_det_jacobian(x)
        if self._affine:
            lp = lp - self._log_half()
        return lp.sum(tuple(range(-self._event_dims, 0))) if self._event_dims else lp

    def _draw(self, sample_shape: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        shape = self._extended_shape(torch.Size(sample_shape))
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        x = self.loc + eps * self.scale
        return x, self._squash(x), eps

    def rsample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        x, y, _ = self._draw(sample_shape)
        self._cache = (y, x)
        return y

    def sample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample_and_log_prob(self, sample_shape: Sequence[int] = torch.Size()) -> tuple[torch.Tensor, torch.Tensor]:
        """Draws a reparameterised sample and scores its exact pre-tanh value.

        Args:
            sample_shape: leading sample dimensions.

        Returns:
            ``(sample, log_prob)``.
        """
        x, y, eps = self._draw(sample_shape)
        return y, self._log_prob_from_preimage(x, eps)

    def sample_and_log_prob(self, sample_shape: Sequence[int] = torch.Size()) -> tuple[torch.Tensor, torch.Tensor]:
        """Like :meth:`rsample_and_log_prob` with a detached sample (score-function gradients only).

        Args:
            sample_shape: leading sample dimensions.

        Returns:
            ``(sample, log_prob)``.
        """
        with torch.no_grad():
            x, y, _ = self._draw(sample_shape)
        return y, self._log_prob_from_preimage(x)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        cache = self._cache
        x = cache[1] if cache is not None and cache[0] is value else self._unsquash(value)
        return self._log_prob_from_preimage(x)

    @property
    def deterministic_sample(self) -> torch.Tensor:
        """``tanh`` of the location, rescaled: the action used under ``DETERMINISTIC`` exploration."""
        return self._squash(self.loc.expand(self.batch_shape + self.event_shape))

    @property
    def mode(self) -> torch.Tensor:
        """The mode of the squashed density (numerical, see :meth:`get_mode`)."""
        return self.get_mode()

    @torch.no_grad()
    def get_mode(self, num_iterations: int = 100) -> torch.Tensor:
        """Computes the mode of the squashed distribution, element-wise.

        The density of ``y`` in terms of ``x = atanh(u)`` is ``N(x) / (1 - tanh(x)^2)`` (up to a constant), whose
        stationary points solve ``x = loc + 2 scale^2 tanh(x)``. That map is increasing and its stable fixed points
        are exactly the local maxima, so iterating it from ``loc ± 2 scale^2`` reaches the largest and the smallest
        maximum; the better of the two is returned. (TorchRL estimates the mode with Adam from samples.)

        Args:
            num_iterations: fixed-point iterations. Defaults to ``100``.

        Returns:
            The mode, shaped like a sample.
        """
        loc, var2 = self.loc.expand(self.batch_shape + self.event_shape), 2 * self.scale**2
        candidates = []
        for start in (loc + var2, loc - var2):
            x = start
            for _ in range(num_iterations):
                x = loc + var2 * x.tanh()
            candidates.append(x)
        score = [self._normal_log_prob(x) - tanh_log_abs_det_jacobian(x) for x in candidates]
        return self._squash(torch.where(score[0] >= score[1], candidates[0], candidates[1]))

    @property
    def mean(self) -> torch.Tensor:
        raise RuntimeError(
            "TanhNormal has no closed-form mean; estimate it with dist.sample((N,)).mean(0), or use "
            "deterministic_sample."
        )


def same_squashing(p: D.Distribution, q: D.Distribution) -> bool:
    """Whether ``p`` and ``q`` are ``TanhNormal`` with the same bounds (given as the same objects, as when one
    actor builds both, or as equal numbers; no device sync). They then share their squashing bijection, and
    KL is invariant under a shared bijection: ``KL(p || q)`` is the KL of their pre-tanh normals
    (``p.base_dist``, ``q.base_dist``), as TorchRL's ``TransformedDistribution`` computes it.

    Examples:
        >>> p = TanhNormal(torch.zeros(2), torch.ones(2))
        >>> same_squashing(p, TanhNormal(torch.ones(2), torch.ones(2))), same_squashing(p, D.Normal(0.0, 1.0))
        (True, False)
    """
    if not (isinstance(p, TanhNormal) and type(p) is type(q)):
        return False
    for a, b in zip(p._bounds_raw[:2], q._bounds_raw[:2]):
        if a is not b and not (is_number(a) and is_number(b) and a == b):
            return False
    return True


class IndependentNormal(D.Independent):
    """A diagonal Normal whose last ``event_dim`` dimensions form the event.

    Args:
        loc: location.
        scale: standard deviation: tensor, number or callable of ``loc``.
        upscale: ``a`` in ``loc = a * tanh(loc / a)`` when ``tanh_loc=True``. Defaults to ``5.0``.
        tanh_loc: bound the location with a scaled tanh.
        event_dim: number of event dimensions. Defaults to ``1``.
        **kwargs: forwarded to ``torch.distributions.Normal``.

    Examples:
        >>> import torch
        >>> dist = IndependentNormal(torch.zeros(4, 2), 1.0)
        >>> dist.log_prob(torch.zeros(4, 2)).shape
        torch.Size([4])
    """

    num_params = 2

    def __init__(
        self,
        loc: torch.Tensor,
        scale: ScaleLike,
        upscale: float = 5.0,
        tanh_loc: bool = False,
        event_dim: int = 1,
        **kwargs: Any,
    ) -> None:
        self.tanh_loc = tanh_loc
        self.upscale = upscale
        self._event_dim = event_dim
        self._kwargs = kwargs
        self.update(loc, scale)

    def update(self, loc: torch.Tensor, scale: ScaleLike) -> None:
        """Sets new parameters.

        Args:
            loc: new location.
            scale: new scale.
        """
        if self.tanh_loc:
            loc = self.upscale * (loc / self.upscale).tanh()
        kwargs = {"validate_args": False, **self._kwargs}
        super().__init__(D.Normal(loc, resolve_scale(scale, loc), **kwargs), self._event_dim, validate_args=False)

    @property
    def mode(self) -> torch.Tensor:
        return self.base_dist.mean

    @property
    def deterministic_sample(self) -> torch.Tensor:
        return self.mean


class Delta(D.Distribution):
    """A point mass at ``param``: samples are ``param``, ``log_prob`` is ``+inf`` on it and ``-inf`` elsewhere.

    Args:
        param: the location of the mass.
        atol: absolute tolerance for "equal to ``param``". Defaults to ``1e-6``.
        rtol: relative tolerance. Defaults to ``1e-6``.
        batch_shape: batch shape; with ``event_shape``, defaults to ``param.shape[:-1]``.
        event_shape: event shape; defaults to ``param.shape[-1:]``.

    Examples:
        >>> import torch
        >>> dist = Delta(torch.ones(3, 2))
        >>> dist.sample().shape, dist.log_prob(torch.ones(3, 2))
        (torch.Size([3, 2]), tensor([inf, inf, inf]))
    """

    arg_constraints: dict = {}
    has_rsample = True

    def __init__(
        self,
        param: torch.Tensor,
        atol: float = 1e-6,
        rtol: float = 1e-6,
        batch_shape: torch.Size | Sequence[int] | None = None,
        event_shape: torch.Size | Sequence[int] | None = None,
    ) -> None:
        batch_shape = torch.Size(batch_shape or ())
        event_shape = torch.Size(event_shape or ())
        if not batch_shape and not event_shape:
            batch_shape, event_shape = param.shape[:-1], param.shape[-1:]
        self.param = param
        self.atol = atol
        self.rtol = rtol
        super().__init__(batch_shape=batch_shape, event_shape=event_shape, validate_args=False)

    def update(self, param: torch.Tensor) -> None:
        """Moves the mass to ``param``.

        Args:
            param: the new location.
        """
        self.param = param

    def expand(self, batch_shape: torch.Size, _instance: Any = None) -> Delta:
        if self.batch_shape == torch.Size(batch_shape):
            return self
        return type(self)(self.param.expand(*batch_shape, *self.event_shape), atol=self.atol, rtol=self.rtol,
                          batch_shape=batch_shape, event_shape=self.event_shape)

    def _is_equal(self, value: torch.Tensor) -> torch.Tensor:
        param = self.param.expand_as(value)
        equal = (value - param).abs() < self.atol + self.rtol * param.abs()
        return equal.flatten(-len(self.event_shape)).all(-1) if self.event_shape else equal

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        equal = self._is_equal(value)
        inf = torch.full_like(equal, float("inf"), dtype=value.dtype)
        return torch.where(equal, inf, -inf)

    def rsample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        return self.param.expand(*sample_shape, *self.param.shape)

    def sample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        with torch.no_grad():
            return self.rsample(sample_shape)

    @property
    def mode(self) -> torch.Tensor:
        return self.param

    @property
    def mean(self) -> torch.Tensor:
        return self.param

    @property
    def deterministic_sample(self) -> torch.Tensor:
        return self.param


def _bound_alias(value: Any, alias: Any, default: float, name: str, alias_name: str) -> Any:
    """``alias`` when it is given instead of ``value`` (left at ``default``); both given is an error."""
    if alias is None:
        return value
    if not (isinstance(value, float) and value == default):
        raise TypeError(f"TanhDelta: give {name}= or {alias_name}=, not both")
    return alias


class TanhDelta(_SquashedMixin, D.Distribution):
    """A point mass at ``mid + half * tanh(param + mid)``, with ``mid``/``half`` the centre/half-width of ``[low, high]``.

    The ``+ mid`` shift of the parameter reproduces TorchRL's parametrisation (it is zero for the default
    ``[-1, 1]`` range). Deterministic actors (DDPG, TD3) use it through ``ProbabilisticActor``.

    Args:
        param: the unsquashed parameter.
        low: lower bound. Defaults to ``-1.0``.
        high: upper bound. Defaults to ``1.0``.
        event_dims: number of event dimensions. Defaults to ``1``.
        atol: absolute tolerance of ``log_prob``'s equality test. Defaults to ``1e-6``.
        rtol: relative tolerance. Defaults to ``1e-6``.
        safe: clamp the squashed value to ``±(1 - resolution)``. Defaults to ``True``.
        min: another name of ``low`` (TorchRL's multi-agent tutorials pass ``min``/``max``); give one of the two.
        max: another name of ``high``.

    Examples:
        >>> import torch
        >>> dist = TanhDelta(torch.zeros(2, 3), low=-2.0, high=2.0)
        >>> dist.sample()
        tensor([[0., 0., 0.],
                [0., 0., 0.]])
    """

    arg_constraints = {"loc": constraints.real}
    has_rsample = True

    def __init__(
        self,
        param: torch.Tensor,
        low: torch.Tensor | float = -1.0,
        high: torch.Tensor | float = 1.0,
        event_dims: int = 1,
        atol: float = 1e-6,
        rtol: float = 1e-6,
        safe: bool = True,
        *,
        min: torch.Tensor | float | None = None,  # noqa: A002  (the keyword TorchRL's tutorials use)
        max: torch.Tensor | float | None = None,  # noqa: A002
    ) -> None:
        low = _bound_alias(low, min, -1.0, "low", "min")
        high = _bound_alias(high, max, 1.0, "high", "max")
        check_bounds(low, high, name="TanhDelta")
        self._safe = safe
        self.atol = atol
        self.rtol = rtol
        self._set_bounds(low, high, param)
        split = param.ndim - event_dims
        super().__init__(param.shape[:split], param.shape[split:], validate_args=False)
        self.update(param)

    def update(self, net_output: torch.Tensor) -> None:
        """Moves the mass.

        Args:
            net_output: the new unsquashed parameter.
        """
        self.param = net_output
        self.loc = net_output + self._mid if self._affine else net_output

    @property
    def base_dist(self) -> Delta:
        """The point mass in pre-tanh space."""
        return Delta(self.loc, atol=self.atol, rtol=self.rtol, batch_shape=self.batch_shape,
                     event_shape=self.event_shape)

    @property
    def mode(self) -> torch.Tensor:
        return self._squash(self.loc)

    @property
    def deterministic_sample(self) -> torch.Tensor:
        return self.mode

    @property
    def mean(self) -> torch.Tensor:
        raise AttributeError("TanhDelta has no analytical mean; use mode or deterministic_sample.")

    def rsample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        mode = self.mode
        return mode.expand(*sample_shape, *mode.shape)

    def sample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        with torch.no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        # Compared in action space: a pre-image comparison would fail where tanh saturates.
        point = Delta(self.mode, atol=self.atol, rtol=self.rtol, batch_shape=self.batch_shape,
                      event_shape=self.event_shape)
        return point.log_prob(value)
