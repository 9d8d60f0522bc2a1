"""Dueling Q-networks (Wang et al., 2016, https://arxiv.org/abs/1511.06581)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from tdrl.modules.models.conv import ConvNet
from tdrl.modules.models.mlp import MLP

__all__ = ["DuelingMlpDQNet", "DuelingCnnDQNet"]


def _dueling_heads(module: nn.Module, out_features: int | torch.Size, out_features_value: int, mlp_kwargs: dict,
                   device: Any) -> None:
    module.out_features = out_features
    module.out_features_value = out_features_value
    module.advantage = MLP(out_features=out_features, device=device, **mlp_kwargs)
    module.value = MLP(out_features=out_features_value, device=device, **mlp_kwargs)
    # Zero biases, as in TorchRL, so that freshly built heads start unbiased.
    for layer in module.modules():
        if isinstance(layer, (nn.Conv2d, nn.Linear)) and isinstance(layer.bias, torch.Tensor):
            layer.bias.data.zero_()


def _combine(features: torch.Tensor, advantage_head: nn.Module, value_head: nn.Module) -> torch.Tensor:
    advantage = advantage_head(features)
    return value_head(features) + advantage - advantage.mean(dim=-1, keepdim=True)


class DuelingMlpDQNet(nn.Module):
    """MLP dueling Q-network: ``Q = V + A - mean(A)`` on top of a shared MLP trunk.

    Args:
        out_features: number of actions.
        out_features_value: size of the value head. Defaults to ``1``.
        mlp_kwargs_feature: overrides for the trunk ``MLP`` (defaults: ``num_cells=[256, 256]``,
            ``out_features=256``, ``activation_class=nn.ELU``, ``activate_last_layer=True``).
        mlp_kwargs_output: overrides for both heads (defaults: ``depth=1``, ``num_cells=512``, ``nn.ELU``).
        device: device on which the parameters are created.

    Examples:
        >>> import torch
        >>> DuelingMlpDQNet(4)(torch.zeros(2, 8)).shape
        torch.Size([2, 4])
    """

    def __init__(
        self,
        out_features: int | torch.Size,
        out_features_value: int = 1,
        mlp_kwargs_feature: dict | None = None,
        mlp_kwargs_output: dict | None = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        feature_kwargs = {"num_cells": [256, 256], "out_features": 256, "activation_class": nn.ELU,
                          "activate_last_layer": True, **(mlp_kwargs_feature or {})}
        self.features = MLP(device=device, **feature_kwargs)
        output_kwargs = {"depth": 1, "activation_class": nn.ELU, "num_cells": 512, "bias_last_layer": True,
                         **(mlp_kwargs_output or {})}
        _dueling_heads(self, out_features, out_features_value, output_kwargs, device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _combine(self.features(x), self.advantage, self.value)


class DuelingCnnDQNet(nn.Module):
    """Convolutional dueling Q-network (Atari-style trunk): ``Q = V + A - mean(A)``.

    Args:
        out_features: number of actions.
        out_features_value: size of the value head. Defaults to ``1``.
        cnn_kwargs: overrides for the :class:`ConvNet` trunk (defaults: ``num_cells=[32, 64, 64]``,
            ``strides=[4, 2, 1]``, ``kernel_sizes=[8, 4, 3]``).
        mlp_kwargs: overrides for both heads (defaults: ``depth=1``, ``num_cells=512``, ``nn.ELU``).
        device: device on which the parameters are created.

    Examples:
        >>> import torch
        >>> DuelingCnnDQNet(6)(torch.zeros(2, 4, 84, 84)).shape
        torch.Size([2, 6])
    """

    def __init__(
        self,
        out_features: int,
        out_features_value: int = 1,
        cnn_kwargs: dict | None = None,
        mlp_kwargs: dict | None = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        conv_kwargs = {"num_cells": [32, 64, 64], "strides": [4, 2, 1], "kernel_sizes": [8, 4, 3],
                       **(cnn_kwargs or {})}
        self.features = ConvNet(device=device, **conv_kwargs)
        output_kwargs = {"depth": 1, "activation_class": nn.ELU, "num_cells": 512, "bias_last_layer": True,
                         **(mlp_kwargs or {})}
        _dueling_heads(self, out_features, out_features_value, output_kwargs, device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _combine(self.features(x), self.advantage, self.value)
