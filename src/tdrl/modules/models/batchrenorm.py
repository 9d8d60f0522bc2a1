"""Batch renormalisation (Ioffe, 2017, https://arxiv.org/abs/1702.03275), as used by CrossQ."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["BatchRenorm1d"]


class BatchRenorm1d(nn.Module):
    """Batch normalisation corrected towards the running statistics: ``(x - mu_B) / sigma_B * r + d``.

    ``r = clip(sigma_B / sigma, 1/max_r, max_r)`` and ``d = clip((mu_B - mu) / sigma, -max_d, max_d)`` (no
    gradient), so training-mode outputs stay consistent with evaluation, which uses the running statistics.
    The correction is phased in over ``warmup_steps`` batches (a step at the end, or linearly with
    ``smooth=True``).

    Args:
        num_features: size of dimension 1 (features / channels).

    Keyword Args:
        momentum: running-statistics update rate. Defaults to ``0.01``.
        eps: variance epsilon. Defaults to ``1e-5``.
        max_r: bound of the scale correction. Defaults to ``3.0``.
        max_d: bound of the shift correction. Defaults to ``5.0``.
        warmup_steps: batches before the correction is fully on. Defaults to ``10000``.
        smooth: ramp the correction in linearly instead of switching it on at once.

    Examples:
        >>> import torch
        >>> norm = BatchRenorm1d(3, warmup_steps=0)
        >>> out = norm(torch.randn(64, 3) * 5 + 2)
        >>> out.shape, int(norm.num_batches_tracked)
        (torch.Size([64, 3]), 1)
    """

    def __init__(self, num_features: int, *, momentum: float = 0.01, eps: float = 1e-5, max_r: float = 3.0,
                 max_d: float = 5.0, warmup_steps: int = 10000, smooth: bool = False) -> None:
        super().__init__()
        self.num_features = num_features
        self.momentum, self.eps, self.max_r, self.max_d = momentum, eps, max_r, max_d
        self.warmup_steps, self.smooth = warmup_steps, smooth
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.int64))
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))

    def _warmup_factor(self) -> torch.Tensor:
        done = self.num_batches_tracked.clamp_max(self.warmup_steps).to(self.running_mean.dtype)
        if self.smooth:
            return done / self.warmup_steps
        return (done >= self.warmup_steps).to(done.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() < 2 or x.shape[1] != self.num_features:
            raise ValueError(f"BatchRenorm1d expects [N, {self.num_features}, ...] inputs, got {tuple(x.shape)}.")
        shape = [1, self.num_features] + [1] * (x.dim() - 2)
        running_std = (self.running_var + self.eps).sqrt()
        if self.training:
            dims = [i for i in range(x.dim()) if i != 1]
            mean = x.mean(dims)
            var = x.var(dims, unbiased=False)
            std = (var + self.eps).sqrt()
            r = (std.detach() / running_std).clamp(1 / self.max_r, self.max_r)
            d = ((mean.detach() - self.running_mean) / running_std).clamp(-self.max_d, self.max_d)
            if self.warmup_steps > 0:
                factor = self._warmup_factor()
                r = 1 + (r - 1) * factor
                d = d * factor
            x = (x - mean.view(shape)) / std.view(shape) * r.view(shape) + d.view(shape)
            n = x.numel() // self.num_features
            with torch.no_grad():
                self.running_mean += self.momentum * (mean.detach() - self.running_mean)
                self.running_var += self.momentum * (var.detach() * n / max(n - 1, 1) - self.running_var)
                self.num_batches_tracked += 1
        else:
            x = (x - self.running_mean.view(shape)) / running_std.view(shape)
        return self.weight.view(shape) * x + self.bias.view(shape)
