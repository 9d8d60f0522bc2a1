"""Multi-layer perceptron with TorchRL's ``MLP`` arguments and layer layout."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from numbers import Number
from typing import Any

import torch
from torch import nn

from tdrl.modules.models.utils import LazyMapping, create_on_device, iter_kwargs

__all__ = ["MLP"]

_DEFAULT_NUM_CELLS = 32


class _SharedBias(nn.Module):
    """A single scalar bias added to every output feature (``single_bias_last_layer=True``)."""

    def __init__(self, *, device: Any = None, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(1, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.bias


class MLP(nn.Sequential):
    """A multi-layer perceptron: ``depth`` hidden layers, then a linear output layer.

    Each hidden block is ``layer -> [Dropout] -> [norm] -> activation``; the layer order (and hence the
    ``state_dict`` keys and the parameter initialisation order) matches TorchRL's ``MLP``. Several inputs are
    concatenated along the last dimension.

    Args:
        in_features: number of input features; ``None`` builds a lazy first layer.
        out_features: number of outputs, or a shape (the output is then reshaped to ``[..., *shape]``).
        depth: number of hidden layers. With an int ``num_cells`` it is required; with a list it must
            match its length. ``depth=None`` and ``num_cells=None`` give a single linear layer.
        num_cells: hidden sizes, an int (repeated ``depth`` times) or a list. Defaults to 32 per layer.
        activation_class: activation class (or factory). Defaults to ``nn.Tanh``.
        activation_kwargs: kwargs for the activation, one dict or one dict per activated layer.
        norm_class: optional normalisation layer class placed before the activation.
        norm_kwargs: kwargs for the normalisation layer, one dict or one per activated layer.
        dropout: dropout probability applied after each hidden layer, or ``None``.
        bias_last_layer: whether the output layer has a bias.
        single_bias_last_layer: use one scalar bias shared by every output instead of one per output.
        layer_class: the linear layer class (``nn.Linear``, ``NoisyLinear``...).
        layer_kwargs: kwargs for ``layer_class``, one dict or one per layer (``depth + 1``).
        activate_last_layer: whether an activation (and norm/dropout) follows the output layer.
        device: device on which the parameters are created.

    Examples:
        >>> import torch
        >>> net = MLP(in_features=8, out_features=4, num_cells=[32, 32])
        >>> net(torch.zeros(5, 8)).shape
        torch.Size([5, 4])
        >>> MLP(out_features=(2, 3), depth=1, num_cells=16)(torch.zeros(5, 7)).shape
        torch.Size([5, 2, 3])
    """

    def __init__(
        self,
        in_features: int | None = None,
        out_features: int | torch.Size | Sequence[int] | None = None,
        depth: int | None = None,
        num_cells: Sequence[int] | int | None = None,
        activation_class: type[nn.Module] | Callable = nn.Tanh,
        activation_kwargs: dict | list[dict] | None = None,
        norm_class: type[nn.Module] | Callable | None = None,
        norm_kwargs: dict | list[dict] | None = None,
        dropout: float | None = None,
        bias_last_layer: bool = True,
        single_bias_last_layer: bool = False,
        layer_class: type[nn.Module] | Callable = nn.Linear,
        layer_kwargs: dict | list[dict] | None = None,
        activate_last_layer: bool = False,
        device: Any = None,
    ) -> None:
        if out_features is None:
            raise ValueError("MLP: out_features must be specified (an int or a shape).")
        cells = _resolve_cells(depth, num_cells)
        self.in_features = in_features
        self.out_features = out_features
        self._reshape_out = not isinstance(out_features, (Number, torch.SymInt))
        self._out_features_num = int(math.prod(out_features)) if self._reshape_out else int(out_features)
        self.num_cells = cells
        self.depth = len(cells)
        self.activation_class = activation_class
        self.activation_kwargs = activation_kwargs
        self.norm_class = norm_class
        self.norm_kwargs = norm_kwargs
        self.dropout = dropout
        self.bias_last_layer = bias_last_layer
        self.single_bias_last_layer = single_bias_last_layer
        self.layer_class = layer_class
        self.layer_kwargs = layer_kwargs
        self.activate_last_layer = activate_last_layer
        super().__init__(*self._make_layers(device))

    def _make_layers(self, device: Any) -> list[nn.Module]:
        n_act = self.depth + int(self.activate_last_layer)
        act_kwargs = iter_kwargs(self.activation_kwargs, n_act, name="activation_kwargs")
        norm_kwargs = iter_kwargs(self.norm_kwargs, n_act, name="norm_kwargs")
        layer_kwargs = iter_kwargs(self.layer_kwargs, self.depth + 1, name="layer_kwargs")
        sizes_in = [self.in_features, *self.num_cells]
        sizes_out = [*self.num_cells, self._out_features_num]
        layers: list[nn.Module] = []
        for i, (n_in, n_out) in enumerate(zip(sizes_in, sizes_out)):
            is_last = i == self.depth
            kwargs = next(layer_kwargs)
            bias = kwargs.pop("bias", self.bias_last_layer if is_last else True)
            single_bias = is_last and self.single_bias_last_layer and bias
            layer = self._make_linear(n_in, n_out, bias=bias and not single_bias, device=device, **kwargs)
            layers.append(layer)
            if single_bias:
                if hasattr(layer, "weight_sigma"):
                    raise ValueError("MLP: single_bias_last_layer=True is incompatible with NoisyLinear layers.")
                param = next(layer.parameters(), None)
                layers.append(
                    _SharedBias(
                        device=param.device if param is not None else device,
                        dtype=param.dtype if param is not None else None,
                    )
                )
            if not is_last or self.activate_last_layer:
                if self.dropout is not None:
                    layers.append(create_on_device(nn.Dropout, device, p=self.dropout))
                norm_kw = next(norm_kwargs)
                if self.norm_class is not None:
                    layers.append(create_on_device(self.norm_class, device, **norm_kw))
                layers.append(create_on_device(self.activation_class, device, **next(act_kwargs)))
        return layers

    def _make_linear(self, n_in: int | None, n_out: int, *, bias: bool, device: Any, **kwargs: Any) -> nn.Module:
        if n_in is not None:
            return create_on_device(self.layer_class, device, n_in, n_out, bias=bias, **kwargs)
        lazy_class = LazyMapping.get(self.layer_class)
        if lazy_class is None:
            raise ValueError(
                f"MLP: in_features=None needs a lazy version of layer_class={self.layer_class!r}; "
                f"known lazy layers: {[cls.__name__ for cls in LazyMapping]}. Pass in_features explicitly."
            )
        return create_on_device(lazy_class, device, n_out, bias=bias, **kwargs)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        x = inputs[0] if len(inputs) == 1 else torch.cat(inputs, -1)
        for layer in self:
            x = layer(x)
        if self._reshape_out:
            x = x.reshape(*x.shape[:-1], *self.out_features)
        return x


def _resolve_cells(depth: int | None, num_cells: Sequence[int] | int | None) -> list[int]:
    if num_cells is None:
        return [] if depth is None else [_DEFAULT_NUM_CELLS] * depth
    if isinstance(num_cells, Sequence):
        cells = [int(c) for c in num_cells]
        if depth is not None and depth != len(cells):
            raise ValueError(f"MLP: depth={depth} conflicts with num_cells={cells} (length {len(cells)}).")
        return cells
    if depth is None:
        raise ValueError(f"MLP: num_cells={num_cells} is an int, so depth must be given too.")
    return [int(num_cells)] * depth
