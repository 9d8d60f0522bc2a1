"""2-D convolutional trunk with TorchRL's ``ConvNet`` arguments and layer layout."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from tdrl.modules.models.mlp import MLP
from tdrl.modules.models.utils import (
    SquashDims,
    Squeeze2dLayer,
    SqueezeLayer,
    create_on_device,
    find_depth,
    iter_kwargs,
)

__all__ = ["ConvNet", "Conv2dNet", "Conv3dNet"]


class ConvNet(nn.Sequential):
    """A stack of ``Conv2d -> activation [-> norm]`` blocks followed by an aggregator (flattening by default).

    Inputs may carry any number of leading batch dimensions: ``[*batch, C, H, W]``.

    Args:
        in_features: number of input channels; ``None`` builds a lazy first convolution.
        depth: number of convolutions; inferred from the list arguments when ``None``.
        num_cells: output channels per layer (int or list). Defaults to ``[32, 32, 32]``.
        kernel_sizes: kernel size per layer (int or list). Defaults to ``3``.
        strides: stride per layer (int or list). Defaults to ``1``.
        paddings: padding per layer (int or list). Defaults to ``0``.
        activation_class: activation class. Defaults to ``nn.ELU``.
        activation_kwargs: kwargs for the activation, one dict or one per layer.
        norm_class: optional normalisation class placed after each activation.
        norm_kwargs: kwargs for the normalisation, one dict or one per layer.
        bias_last_layer: whether the last convolution has a bias.
        aggregator_class: module applied to the feature map. Defaults to :class:`SquashDims`.
        aggregator_kwargs: kwargs for the aggregator. Defaults to ``{"ndims_in": 3}``.
        squeeze_output: squeeze two trailing singleton dimensions (after a ``(1, 1)`` pooling).
        device: device on which the parameters are created.

    Examples:
        >>> import torch
        >>> net = ConvNet(in_features=3, num_cells=[8, 8], kernel_sizes=3, strides=2)
        >>> net(torch.zeros(4, 5, 3, 16, 16)).shape
        torch.Size([4, 5, 72])
    """

    _conv: type[nn.Module] = nn.Conv2d
    _lazy_conv: type[nn.Module] = nn.LazyConv2d
    _spatial_dims = 2

    def __init__(
        self,
        in_features: int | None = None,
        depth: int | None = None,
        num_cells: Sequence[int] | int | None = None,
        kernel_sizes: Sequence[int] | int = 3,
        strides: Sequence[int] | int = 1,
        paddings: Sequence[int] | int = 0,
        activation_class: type[nn.Module] | Callable = nn.ELU,
        activation_kwargs: dict | list[dict] | None = None,
        norm_class: type[nn.Module] | Callable | None = None,
        norm_kwargs: dict | list[dict] | None = None,
        bias_last_layer: bool = True,
        aggregator_class: type[nn.Module] | Callable | None = SquashDims,
        aggregator_kwargs: dict | None = None,
        squeeze_output: bool = False,
        device: Any = None,
    ) -> None:
        if num_cells is None:
            num_cells = [32, 32, 32]
        depth = find_depth(depth, num_cells, kernel_sizes, strides, paddings)
        if depth == 0:
            raise ValueError("ConvNet: depth must be at least 1.")

        def per_layer(value: Sequence[int] | int) -> list[int]:
            return list(value) if isinstance(value, Sequence) else [value] * depth

        self.in_features = in_features
        self.depth = depth
        self.num_cells = per_layer(num_cells)
        self.kernel_sizes = per_layer(kernel_sizes)
        self.strides = per_layer(strides)
        self.paddings = per_layer(paddings)
        self.out_features = self.num_cells[-1]
        self.activation_class = activation_class
        self.activation_kwargs = activation_kwargs
        self.norm_class = norm_class
        self.norm_kwargs = norm_kwargs
        self.bias_last_layer = bias_last_layer
        self.aggregator_class = aggregator_class
        default_kwargs = {"ndims_in": self._spatial_dims + 1}
        self.aggregator_kwargs = aggregator_kwargs if aggregator_kwargs is not None else default_kwargs
        self.squeeze_output = squeeze_output
        super().__init__(*self._make_layers(device))

    def _make_layers(self, device: Any) -> list[nn.Module]:
        act_kwargs = iter_kwargs(self.activation_kwargs, self.depth, name="activation_kwargs")
        norm_kwargs = iter_kwargs(self.norm_kwargs, self.depth, name="norm_kwargs")
        sizes_in = [self.in_features, *self.num_cells[:-1]]
        layers: list[nn.Module] = []
        for i, n_in in enumerate(sizes_in):
            conv_kwargs = {
                "kernel_size": self.kernel_sizes[i],
                "stride": self.strides[i],
                "padding": self.paddings[i],
                "bias": i < self.depth - 1 or self.bias_last_layer,
                "device": device,
            }
            if n_in is None:
                layers.append(self._lazy_conv(self.num_cells[i], **conv_kwargs))
            else:
                layers.append(self._conv(n_in, self.num_cells[i], **conv_kwargs))
            layers.append(create_on_device(self.activation_class, device, **next(act_kwargs)))
            norm_kw = next(norm_kwargs)
            if self.norm_class is not None:
                layers.append(create_on_device(self.norm_class, device, **norm_kw))
        if self.aggregator_class is not None:
            layers.append(create_on_device(self.aggregator_class, device, **self.aggregator_kwargs))
        if self.squeeze_output:
            layers.append(Squeeze2dLayer() if self._spatial_dims == 2 else SqueezeLayer((-3, -2, -1)))
        return layers

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        n = self._spatial_dims + 1
        if inputs.ndim < n:
            raise ValueError(f"{type(self).__name__} expects inputs [*batch, C, *{self._spatial_dims} spatial dims], "
                             f"got {tuple(inputs.shape)}.")
        batch = inputs.shape[:-n]
        x = inputs.flatten(0, len(batch) - 1) if len(batch) > 1 else inputs
        for layer in self:
            x = layer(x)
        return x.unflatten(0, batch) if len(batch) > 1 else x

    @classmethod
    def default_atari_dqn(cls, num_actions: int) -> nn.Sequential:
        """Returns the Nature-DQN network (Mnih et al., 2015): three convolutions and a 512-unit MLP.

        Args:
            num_actions: size of the action space.

        Returns:
            ``nn.Sequential(ConvNet, MLP)``, lazily initialised.

        Examples:
            >>> import torch
            >>> ConvNet.default_atari_dqn(6)(torch.zeros(2, 4, 84, 84)).shape
            torch.Size([2, 6])
        """
        cnn = cls(activation_class=nn.ReLU, num_cells=[32, 64, 64], kernel_sizes=[8, 4, 3], strides=[4, 2, 1])
        mlp = MLP(activation_class=nn.ReLU, out_features=num_actions, num_cells=[512])
        return nn.Sequential(cnn, mlp)


Conv2dNet = ConvNet


class Conv3dNet(ConvNet):
    """The 3-D version of :class:`ConvNet` (``Conv3d`` layers, inputs ``[*batch, C, D, H, W]``).

    Arguments are those of :class:`ConvNet`; ``num_cells`` defaults to ``[32] * depth`` (``[32, 32, 32]``
    without depth) and the aggregator flattens the last four dimensions.

    Examples:
        >>> import torch
        >>> net = Conv3dNet(in_features=2, num_cells=[4], kernel_sizes=3)
        >>> net(torch.zeros(5, 2, 6, 6, 6)).shape
        torch.Size([5, 256])
    """

    _conv = nn.Conv3d
    _lazy_conv = nn.LazyConv3d
    _spatial_dims = 3

    def __init__(self, in_features: int | None = None, depth: int | None = None,
                 num_cells: Sequence[int] | int | None = None, **kwargs: Any) -> None:
        if num_cells is None:
            num_cells = [32] * (3 if depth is None else depth)
        super().__init__(in_features=in_features, depth=depth, num_cells=num_cells, **kwargs)
