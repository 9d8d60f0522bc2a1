"""``NormalParamWrapper``: TorchRL's older network wrapper splitting an output into ``(loc, scale)``."""

from __future__ import annotations

from typing import Any

import torch
from tensordict.nn import NormalParamExtractor
from torch import nn

__all__ = ["NormalParamWrapper"]


class NormalParamWrapper(nn.Module):
    """Runs ``operator`` and splits its last dimension into a location and a positive scale.

    The same as ``nn.Sequential(operator, NormalParamExtractor(scale_mapping, scale_lb))``. TorchRL 0.14.1
    keeps the class only to raise a ``RuntimeError`` pointing to ``NormalParamExtractor``; here it works
    (docs/differences.md).

    Args:
        operator: the network; its output's last dimension has even size ``2 * d``.
        scale_mapping: how the second half becomes a scale (``"biased_softplus_1.0"``, ``"exp"``, ...).
        scale_lb: lower bound of the scale. Defaults to ``1e-4``.

    Examples:
        >>> import torch
        >>> wrapper = NormalParamWrapper(torch.nn.Linear(3, 4))
        >>> loc, scale = wrapper(torch.randn(5, 3))
        >>> loc.shape, bool((scale > 0).all())
        (torch.Size([5, 2]), True)
    """

    def __init__(
        self, operator: nn.Module, scale_mapping: str = "biased_softplus_1.0", scale_lb: float = 1e-4
    ) -> None:
        super().__init__()
        self.operator = operator
        self.scale_mapping = scale_mapping
        self.scale_lb = scale_lb
        self.extractor = NormalParamExtractor(scale_mapping=scale_mapping, scale_lb=scale_lb)

    def forward(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, ...]:
        out = self.operator(*args, **kwargs)
        if isinstance(out, tuple):
            # Extra outputs (e.g. an RNN's hidden state) follow (loc, scale), as in TorchRL's older wrapper.
            return (*self.extractor(out[0]), *out[1:])
        if out.shape[-1] % 2:
            raise ValueError(
                f"NormalParamWrapper: the operator's last dimension must be even (loc and scale "
                f"halves), got shape {tuple(out.shape)}."
            )
        return self.extractor(out)
