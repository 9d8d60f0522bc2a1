"""Running normalisers of value targets (TorchRL's ``ValueNorm`` family).

A normaliser folds batches of value targets into running statistics (``update``) and maps values to and from
the normalised scale (``normalize`` / ``denormalize``). ``scale()`` is the divisor alone: advantages are
already centred by the critic, so losses only divide them by it (``advantage_norm=`` of
:class:`~tdrl.objectives.ClipPPOLoss` and :class:`~tdrl.objectives.A2CLoss`).

- :class:`PopArtValueNorm`: debiased exponential moving averages of the mean and the mean of squares
  (van Hasselt et al., "Learning values across many orders of magnitude", PopArt).
- :class:`RunningValueNorm`: the exact mean and population variance of everything seen so far (the
  batched form of Welford's update, Chan et al.).
- :class:`PercentileValueNorm`: moving averages of a low and a high quantile; the scale is their distance,
  never below ``min_scale`` (the return normalisation of DreamerV3, Hafner et al. 2023).

Buffers carry TorchRL's names, so a TorchRL normaliser's ``state_dict`` loads.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch
from torch import Tensor, nn

__all__ = ["PercentileValueNorm", "PopArtValueNorm", "RunningValueNorm", "ValueNorm"]


class ValueNorm(nn.Module, ABC):
    """Base class: running statistics of value targets whose trailing dimensions are ``shape``.

    Keyword Args:
        shape: shape of one value (the trailing dimensions); leading dimensions are reduced over.
        epsilon: lower bound of the variance (numerical safety).
        device: device of the statistics.

    Examples:
        >>> import torch
        >>> from tdrl.modules import RunningValueNorm
        >>> norm: ValueNorm = RunningValueNorm()
        >>> norm.update(torch.tensor([[1.0], [3.0]]))
        >>> norm.denormalize(norm.normalize(torch.tensor([5.0])))
        tensor([5.])
    """

    shape: tuple[int, ...]

    def __init__(
        self, *, shape: int | tuple[int, ...] = 1, epsilon: float = 1e-5, device: torch.device | None = None
    ) -> None:
        super().__init__()
        self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.epsilon = epsilon
        self._device = device

    @abstractmethod
    def update(self, value_target: Tensor) -> None:
        """Folds a batch of value targets into the running statistics (no gradient)."""

    @abstractmethod
    def normalize(self, value_target: Tensor) -> Tensor:
        """``value_target`` on the normalised scale."""

    @abstractmethod
    def denormalize(self, normalised_value: Tensor) -> Tensor:
        """The inverse of :meth:`normalize`."""

    @abstractmethod
    def scale(self) -> Tensor:
        """The divisor :meth:`normalize` applies (for quantities that must not be re-centred)."""

    def _batch_dims(self, value_target: Tensor) -> tuple[int, ...]:
        """The leading dimensions of ``value_target``; raises when its trailing ones are not ``shape``."""
        n = len(self.shape)
        trailing = tuple(value_target.shape[value_target.ndim - n :]) if value_target.ndim >= n else None
        if trailing != self.shape:
            raise ValueError(
                f"{type(self).__name__}(shape={self.shape}) got a value target of shape "
                f"{tuple(value_target.shape)}: its trailing dimensions must be {self.shape}"
            )
        return tuple(range(value_target.ndim - n))


class PopArtValueNorm(ValueNorm):
    """Debiased exponential moving averages of the mean and the mean of squares.

    Keyword Args:
        shape: shape of one value (default ``1``).
        beta: decay of the moving averages (default ``0.99999``).
        epsilon: lower bound of the variance and of the debiasing weight (default ``1e-5``).
        device: device of the statistics.

    Examples:
        >>> norm = PopArtValueNorm(beta=0.9)
        >>> norm.update(torch.tensor([[1.0], [3.0]]))
        >>> norm.normalize(torch.tensor([[2.0]])), norm.scale()
        (tensor([[0.]]), tensor([1.]))
    """

    def __init__(
        self,
        *,
        shape: int | tuple[int, ...] = 1,
        beta: float = 0.99999,
        epsilon: float = 1e-5,
        device: torch.device | None = None,
    ) -> None:
        super().__init__(shape=shape, epsilon=epsilon, device=device)
        self.beta = beta
        self.register_buffer("running_mean", torch.zeros(self.shape, device=device))
        self.register_buffer("running_mean_sq", torch.zeros(self.shape, device=device))
        # Total weight of the averages so far (1 - beta ** updates): dividing by it removes the bias of the
        # zero start.
        self.register_buffer("debiasing_term", torch.zeros((), device=device))

    def _moments(self) -> tuple[Tensor, Tensor]:
        weight = self.debiasing_term.clamp(min=self.epsilon)
        mean = self.running_mean / weight
        var = (self.running_mean_sq / weight - mean * mean).clamp(min=self.epsilon)
        return mean, var

    @torch.no_grad()
    def update(self, value_target: Tensor) -> None:
        x = value_target.detach()
        dims = self._batch_dims(x)
        mean, mean_sq = (x.mean(dims), (x * x).mean(dims)) if dims else (x, x * x)
        self.running_mean.lerp_(mean.to(self.running_mean.dtype), 1.0 - self.beta)
        self.running_mean_sq.lerp_(mean_sq.to(self.running_mean_sq.dtype), 1.0 - self.beta)
        self.debiasing_term.mul_(self.beta).add_(1.0 - self.beta)

    def normalize(self, value_target: Tensor) -> Tensor:
        mean, var = self._moments()
        return (value_target - mean) / var.sqrt()

    def denormalize(self, normalised_value: Tensor) -> Tensor:
        mean, var = self._moments()
        return normalised_value * var.sqrt() + mean

    def scale(self) -> Tensor:
        return self._moments()[1].sqrt()


class RunningValueNorm(ValueNorm):
    """The exact mean and population variance of every target seen (no decay).

    Keyword Args:
        shape: shape of one value (default ``1``).
        epsilon: lower bound of the variance (default ``1e-5``).
        device: device of the statistics.

    Examples:
        >>> norm = RunningValueNorm()
        >>> norm.update(torch.tensor([[0.0], [2.0]]))
        >>> norm.update(torch.tensor([[4.0], [6.0]]))
        >>> norm.mean, norm.scale() ** 2
        (tensor([3.]), tensor([5.]))
    """

    def __init__(
        self, *, shape: int | tuple[int, ...] = 1, epsilon: float = 1e-5, device: torch.device | None = None
    ) -> None:
        super().__init__(shape=shape, epsilon=epsilon, device=device)
        self.register_buffer("mean", torch.zeros(self.shape, device=device))
        # Sum of squared deviations from the mean over all targets seen.
        self.register_buffer("m2", torch.zeros(self.shape, device=device))
        self.register_buffer("count", torch.zeros((), device=device))

    @torch.no_grad()
    def update(self, value_target: Tensor) -> None:
        x = value_target.detach().to(self.mean.dtype)
        dims = self._batch_dims(x)
        # The batch size from the shape, not from a tensor: no device synchronisation.
        n = float(math.prod(x.shape[d] for d in dims)) if dims else 1.0
        batch_mean = x.mean(dims) if dims else x
        batch_m2 = (x - batch_mean).pow(2).sum(dims) if dims else torch.zeros_like(x)
        total = self.count + n
        delta = batch_mean - self.mean
        self.m2.add_(batch_m2 + delta * delta * (self.count * n / total))
        self.mean.add_(delta * (n / total))
        self.count.copy_(total)

    def _std(self) -> Tensor:
        return (self.m2 / self.count.clamp(min=1.0)).clamp(min=self.epsilon).sqrt()

    def normalize(self, value_target: Tensor) -> Tensor:
        return (value_target - self.mean) / self._std()

    def denormalize(self, normalised_value: Tensor) -> Tensor:
        return normalised_value * self._std() + self.mean

    def scale(self) -> Tensor:
        return self._std()


class PercentileValueNorm(ValueNorm):
    """Moving averages of a low and a high quantile; the scale is ``max(high - low, min_scale)``.

    Keyword Args:
        shape: shape of one value (default ``1``).
        quantiles: the two quantiles tracked (default ``(0.05, 0.95)``).
        rate: step of the moving averages towards each batch's quantiles (default ``0.01``).
        min_scale: smallest scale (default ``1.0``): large returns are scaled down, small ones not up.
        center: subtract the low quantile in :meth:`normalize` (default ``False``: divide only).
        epsilon: unused (``min_scale`` bounds the divisor); kept for the common signature.
        device: device of the statistics.

    Examples:
        >>> norm = PercentileValueNorm(rate=1.0)
        >>> norm.update(torch.arange(101.0).unsqueeze(-1))
        >>> norm.scale()
        tensor([90.])
    """

    def __init__(
        self,
        *,
        shape: int | tuple[int, ...] = 1,
        quantiles: tuple[float, float] = (0.05, 0.95),
        rate: float = 0.01,
        min_scale: float = 1.0,
        center: bool = False,
        epsilon: float = 1e-5,
        device: torch.device | None = None,
    ) -> None:
        super().__init__(shape=shape, epsilon=epsilon, device=device)
        low, high = (float(q) for q in quantiles)
        if not 0.0 <= low < high <= 1.0:
            raise ValueError(f"quantiles must satisfy 0 <= low < high <= 1, got {tuple(quantiles)}")
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate must be in [0, 1], got {rate}")
        if min_scale <= 0:
            raise ValueError(f"min_scale must be positive, got {min_scale}")
        self.quantiles = (low, high)
        self.rate, self.min_scale, self.center = rate, min_scale, center
        self.register_buffer("low", torch.zeros(self.shape, device=device))
        self.register_buffer("high", torch.zeros(self.shape, device=device))
        self.register_buffer("_q", torch.tensor([low, high], device=device), persistent=False)

    @torch.no_grad()
    def update(self, value_target: Tensor) -> None:
        x = value_target.detach()
        self._batch_dims(x)
        rows = x.reshape(-1, *self.shape).to(self.low.dtype)
        q_low, q_high = torch.quantile(rows, self._q.to(rows), dim=0)
        self.low.lerp_(q_low, self.rate)
        self.high.lerp_(q_high, self.rate)

    def normalize(self, value_target: Tensor) -> Tensor:
        shifted = value_target - self.low if self.center else value_target
        return shifted / self.scale()

    def denormalize(self, normalised_value: Tensor) -> Tensor:
        scaled = normalised_value * self.scale()
        return scaled + self.low if self.center else scaled

    def scale(self) -> Tensor:
        return (self.high - self.low).clamp_min(self.min_scale)
