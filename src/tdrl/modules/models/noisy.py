"""Factorised-Gaussian noisy linear layers (Fortunato et al., 2017, https://arxiv.org/abs/1706.10295)."""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict.nn import InteractionType, interaction_type
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedBuffer, UninitializedParameter

__all__ = ["NoisyLinear", "NoisyLazyLinear", "reset_noise"]


class NoisyLinear(nn.Linear):
    """A linear layer whose weights are ``mu + sigma * epsilon`` with factorised Gaussian ``epsilon``.

    The noise is drawn by :meth:`reset_noise` (at construction and whenever the caller asks, typically
    after each optimisation step via ``module.apply(reset_noise)``); the forward pass never resamples it.

    Args:
        in_features: input features.
        out_features: output features.
        bias: whether the layer has a (noisy) bias.
        device: device of the parameters.
        dtype: dtype of the parameters.
        std_init: initial noise scale (``sigma = std_init / sqrt(fan)``). Defaults to ``0.5``.
        use_exploration_type: if ``True`` (default; ``None`` means ``True``) the noise is applied only under
            ``set_exploration_type(ExplorationType.RANDOM)``; if ``False``, only in training mode.

    Examples:
        >>> import torch
        >>> from tensordict.nn import InteractionType, set_interaction_type
        >>> layer = NoisyLinear(3, 2)
        >>> x = torch.ones(1, 3)
        >>> torch.equal(layer(x), x @ layer.weight_mu.T + layer.bias_mu)
        True
        >>> with set_interaction_type(InteractionType.RANDOM):
        ...     torch.equal(layer(x), x @ layer.weight_mu.T + layer.bias_mu)
        False
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: torch.dtype | None = None,
        std_init: float = 0.5,
        use_exploration_type: bool | None = True,
    ) -> None:
        nn.Module.__init__(self)
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.std_init = std_init
        self._use_exploration_type = True if use_exploration_type is None else use_exploration_type
        factory = {"device": device, "dtype": dtype}
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features, **factory))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features, **factory))
        self.register_buffer("weight_epsilon", torch.empty(out_features, in_features, **factory))
        if bias:
            self.bias_mu = nn.Parameter(torch.empty(out_features, **factory))
            self.bias_sigma = nn.Parameter(torch.empty(out_features, **factory))
            self.register_buffer("bias_epsilon", torch.empty(out_features, **factory))
        else:
            self.bias_mu = None
        self.reset_parameters()
        self.reset_noise()

    def reset_parameters(self) -> None:
        """Initialises ``mu`` uniformly in ``±1/sqrt(in_features)`` and ``sigma`` to ``std_init/sqrt(fan)``."""
        mu_range = 1 / math.sqrt(self.in_features)
        with torch.no_grad():
            self.weight_mu.uniform_(-mu_range, mu_range)
            self.weight_sigma.fill_(self.std_init / math.sqrt(self.in_features))
            if self.bias_mu is not None:
                self.bias_mu.uniform_(-mu_range, mu_range)
                self.bias_sigma.fill_(self.std_init / math.sqrt(self.out_features))

    def reset_noise(self) -> None:
        """Draws a new factorised noise sample ``epsilon = f(e_out) f(e_in)^T`` with ``f(x) = sign(x) sqrt|x|``."""
        eps_in = self._scaled_noise(self.in_features)
        eps_out = self._scaled_noise(self.out_features)
        with torch.no_grad():
            self.weight_epsilon.copy_(eps_out.outer(eps_in))
            if self.bias_mu is not None:
                self.bias_epsilon.copy_(eps_out)

    def _scaled_noise(self, size: int) -> torch.Tensor:
        x = torch.randn(size, device=self.weight_mu.device)
        return x.sign() * x.abs().sqrt()

    def _noise_on(self) -> bool:
        if self._use_exploration_type:
            return interaction_type() is InteractionType.RANDOM
        return self.training

    @property
    def weight(self) -> torch.Tensor:
        if self._noise_on():
            return self.weight_mu + self.weight_sigma * self.weight_epsilon
        return self.weight_mu

    @property
    def bias(self) -> torch.Tensor | None:
        if self.bias_mu is None:
            return None
        if self._noise_on():
            return self.bias_mu + self.bias_sigma * self.bias_epsilon
        return self.bias_mu


class NoisyLazyLinear(LazyModuleMixin, NoisyLinear):
    """A :class:`NoisyLinear` whose ``in_features`` is inferred at the first call.

    Args:
        out_features: output features.
        bias: whether the layer has a (noisy) bias.
        device: device of the parameters.
        dtype: dtype of the parameters.
        std_init: initial noise scale. Defaults to ``0.5``.
        use_exploration_type: see :class:`NoisyLinear`.

    Examples:
        >>> import torch
        >>> layer = NoisyLazyLinear(2)
        >>> layer(torch.zeros(4, 3)).shape
        torch.Size([4, 2])
        >>> type(layer).__name__
        'NoisyLinear'
    """

    cls_to_become = NoisyLinear

    def __init__(
        self,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: torch.dtype | None = None,
        std_init: float = 0.5,
        use_exploration_type: bool | None = True,
    ) -> None:
        super().__init__(0, 0, False, device=device, use_exploration_type=use_exploration_type)
        factory = {"device": device, "dtype": dtype}
        self.out_features = out_features
        self.std_init = std_init
        self.weight_mu = UninitializedParameter(**factory)
        self.weight_sigma = UninitializedParameter(**factory)
        self.register_buffer("weight_epsilon", UninitializedBuffer(**factory))
        if bias:
            self.bias_mu = UninitializedParameter(**factory)
            self.bias_sigma = UninitializedParameter(**factory)
            self.register_buffer("bias_epsilon", UninitializedBuffer(**factory))
        else:
            self.bias_mu = None

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def reset_noise(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_noise()

    def initialize_parameters(self, input: torch.Tensor) -> None:
        if not self.has_uninitialized_params():
            return
        with torch.no_grad():
            self.in_features = input.shape[-1]
            shape = (self.out_features, self.in_features)
            self.weight_mu.materialize(shape)
            self.weight_sigma.materialize(shape)
            self.weight_epsilon.materialize(shape)
            if self.bias_mu is not None:
                for tensor in (self.bias_mu, self.bias_sigma, self.bias_epsilon):
                    tensor.materialize((self.out_features,))
        self.reset_parameters()
        self.reset_noise()

    @property
    def weight(self) -> torch.Tensor | None:
        return None if self.has_uninitialized_params() else super().weight

    @property
    def bias(self) -> torch.Tensor | None:
        return None if self.has_uninitialized_params() else super().bias


def reset_noise(layer: nn.Module) -> None:
    """Calls ``layer.reset_noise()`` when the layer has one; meant for ``module.apply(reset_noise)``.

    Args:
        layer: any module.

    Examples:
        >>> from torch import nn
        >>> net = nn.Sequential(NoisyLinear(3, 4), nn.ReLU(), NoisyLinear(4, 2))
        >>> _ = net.apply(reset_noise)
    """
    if hasattr(layer, "reset_noise"):
        layer.reset_noise()
