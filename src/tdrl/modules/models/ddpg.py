"""DDPG actor and critic networks (Lillicrap et al., 2015, https://arxiv.org/abs/1509.02971)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from tdrl.modules.models.conv import ConvNet
from tdrl.modules.models.mlp import MLP
from tdrl.modules.models.utils import SquashDims

__all__ = ["ddpg_init_last_layer", "DdpgMlpActor", "DdpgMlpQNet", "DdpgCnnActor", "DdpgCnnQNet"]


def ddpg_init_last_layer(module: nn.Sequential, scale: float = 6e-4, device: Any = None) -> None:
    """Re-initialises the last linear/conv layer of ``module`` uniformly in ``[-scale/2, scale/2]``.

    Args:
        module: a sequential network (an :class:`MLP`, say).
        scale: width of the uniform initialisation. Defaults to ``6e-4``.
        device: unused, kept for TorchRL compatibility (the noise follows the layer's device).

    Examples:
        >>> net = MLP(in_features=3, out_features=2, num_cells=[8])
        >>> ddpg_init_last_layer(net, 1e-3)
        >>> bool(net[-1].weight.abs().max() <= 5e-4)
        True
    """
    for layer in reversed(list(module)):
        if isinstance(layer, (nn.Linear, nn.Conv2d)) and not isinstance(layer.weight, nn.UninitializedParameter):
            break
    else:
        raise ValueError(f"ddpg_init_last_layer: no initialised nn.Linear / nn.Conv2d found in {type(module).__name__}.")
    with torch.no_grad():
        layer.weight.copy_(torch.rand_like(layer.weight) * scale - scale / 2)
        if layer.bias is not None:
            layer.bias.copy_(torch.rand_like(layer.bias) * scale - scale / 2)


def _conv_defaults(num_cells: list[int], use_avg_pooling: bool) -> dict:
    return {
        "in_features": None,
        "num_cells": num_cells,
        "kernel_sizes": [8, 4, 3],
        "strides": [4, 2, 1],
        "paddings": [0, 0, 1],
        "activation_class": nn.ELU,
        "norm_class": None,
        "aggregator_class": nn.AdaptiveAvgPool2d if use_avg_pooling else SquashDims,
        "aggregator_kwargs": {"output_size": (1, 1)} if use_avg_pooling else {"ndims_in": 3},
        "squeeze_output": use_avg_pooling,
    }


class DdpgMlpActor(nn.Module):
    """DDPG MLP actor: observation -> action (two ELU hidden layers of 400 and 300 units).

    Args:
        action_dim: action dimension.
        mlp_net_kwargs: overrides for the :class:`MLP`.
        device: device on which the parameters are created.

    Examples:
        >>> import torch
        >>> DdpgMlpActor(action_dim=4)(torch.zeros(2, 10)).shape
        torch.Size([2, 4])
    """

    def __init__(self, action_dim: int, mlp_net_kwargs: dict | None = None, device: Any = None) -> None:
        super().__init__()
        kwargs = {"in_features": None, "out_features": action_dim, "depth": 2, "num_cells": [400, 300],
                  "activation_class": nn.ELU, "bias_last_layer": True, **(mlp_net_kwargs or {})}
        self.mlp = MLP(device=device, **kwargs)
        ddpg_init_last_layer(self.mlp, 6e-3)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.mlp(observation)


class DdpgMlpQNet(nn.Module):
    """DDPG MLP critic: the observation is embedded first, the action joins at the second layer.

    Args:
        mlp_net_kwargs_net1: overrides for the observation embedding (default: one lazy 400-unit ELU layer).
        mlp_net_kwargs_net2: overrides for the head (default: one 300-unit ELU hidden layer, one output).
        device: device on which the parameters are created.

    Examples:
        >>> import torch
        >>> DdpgMlpQNet()(torch.zeros(2, 10), torch.zeros(2, 3)).shape
        torch.Size([2, 1])
    """

    def __init__(
        self,
        mlp_net_kwargs_net1: dict | None = None,
        mlp_net_kwargs_net2: dict | None = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        kwargs1 = {"in_features": None, "out_features": 400, "depth": 0, "num_cells": [],
                   "activation_class": nn.ELU, "bias_last_layer": True, "activate_last_layer": True,
                   **(mlp_net_kwargs_net1 or {})}
        self.mlp1 = MLP(device=device, **kwargs1)
        kwargs2 = {"in_features": None, "out_features": 1, "num_cells": [300], "activation_class": nn.ELU,
                   "bias_last_layer": True, **(mlp_net_kwargs_net2 or {})}
        self.mlp2 = MLP(device=device, **kwargs2)
        ddpg_init_last_layer(self.mlp2, 6e-3)

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.mlp2(torch.cat([self.mlp1(observation), action], -1))


class DdpgCnnActor(nn.Module):
    """DDPG convolutional actor: pixels -> (action, hidden features).

    Args:
        action_dim: action dimension.
        conv_net_kwargs: overrides for the :class:`ConvNet`.
        mlp_net_kwargs: overrides for the :class:`MLP` head (default: two 200-unit ELU layers).
        use_avg_pooling: aggregate the feature map by average pooling instead of flattening.
        device: device on which the parameters are created.

    Examples:
        >>> import torch
        >>> action, hidden = DdpgCnnActor(action_dim=2)(torch.zeros(1, 3, 64, 64))
        >>> action.shape
        torch.Size([1, 2])
    """

    def __init__(
        self,
        action_dim: int,
        conv_net_kwargs: dict | None = None,
        mlp_net_kwargs: dict | None = None,
        use_avg_pooling: bool = False,
        device: Any = None,
    ) -> None:
        super().__init__()
        self.convnet = ConvNet(device=device, **{**_conv_defaults([32, 64, 64], use_avg_pooling),
                                                 **(conv_net_kwargs or {})})
        kwargs = {"in_features": None, "out_features": action_dim, "depth": 2, "num_cells": 200,
                  "activation_class": nn.ELU, "bias_last_layer": True, **(mlp_net_kwargs or {})}
        self.mlp = MLP(device=device, **kwargs)
        ddpg_init_last_layer(self.mlp, 6e-4)

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.convnet(observation)
        return self.mlp(hidden), hidden


class DdpgCnnQNet(nn.Module):
    """DDPG convolutional critic: (pixels, action) -> value.

    Args:
        conv_net_kwargs: overrides for the :class:`ConvNet`.
        mlp_net_kwargs: overrides for the :class:`MLP` head (default: two 200-unit ELU layers, one output).
        use_avg_pooling: aggregate the feature map by average pooling (default) instead of flattening.
        device: device on which the parameters are created.

    Examples:
        >>> import torch
        >>> DdpgCnnQNet()(torch.zeros(1, 3, 64, 64), torch.zeros(1, 2)).shape
        torch.Size([1, 1])
    """

    def __init__(
        self,
        conv_net_kwargs: dict | None = None,
        mlp_net_kwargs: dict | None = None,
        use_avg_pooling: bool = True,
        device: Any = None,
    ) -> None:
        super().__init__()
        self.convnet = ConvNet(device=device, **{**_conv_defaults([32, 64, 128], use_avg_pooling),
                                                 **(conv_net_kwargs or {})})
        kwargs = {"in_features": None, "out_features": 1, "depth": 2, "num_cells": 200,
                  "activation_class": nn.ELU, "bias_last_layer": True, **(mlp_net_kwargs or {})}
        self.mlp = MLP(device=device, **kwargs)
        ddpg_init_last_layer(self.mlp, 6e-4)

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([self.convnet(observation), action], -1))
