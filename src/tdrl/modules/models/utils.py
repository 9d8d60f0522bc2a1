"""Small building blocks shared by the model classes (reshaping layers, per-layer kwargs, lazy layers)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch import nn

from tdrl.modules.models.noisy import NoisyLazyLinear, NoisyLinear

__all__ = ["SquashDims", "Squeeze2dLayer", "SqueezeLayer", "create_on_device", "LazyMapping"]

#: Eager layer class -> lazy counterpart, used when ``in_features`` is ``None``.
LazyMapping: dict[type, type] = {
    nn.Linear: nn.LazyLinear,
    nn.Conv1d: nn.LazyConv1d,
    nn.Conv2d: nn.LazyConv2d,
    nn.Conv3d: nn.LazyConv3d,
    NoisyLinear: NoisyLazyLinear,
}


class SquashDims(nn.Module):
    """Flattens the last ``ndims_in`` dimensions of its input into one.

    Args:
        ndims_in: how many trailing dimensions to flatten. Defaults to ``3`` (channels, height, width).

    Examples:
        >>> import torch
        >>> SquashDims()(torch.zeros(2, 3, 4, 5)).shape
        torch.Size([2, 60])
    """

    def __init__(self, ndims_in: int = 3) -> None:
        super().__init__()
        self.ndims_in = ndims_in

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return value.flatten(-self.ndims_in, -1)


class SqueezeLayer(nn.Module):
    """Squeezes the given dimensions (only those of size 1).

    Args:
        dims: the dimensions to squeeze, processed from the last one. Defaults to ``(-1,)``.

    Examples:
        >>> import torch
        >>> SqueezeLayer((-1,))(torch.zeros(2, 3, 1)).shape
        torch.Size([2, 3])
    """

    def __init__(self, dims: Sequence[int] = (-1,)) -> None:
        super().__init__()
        if any(dim >= 0 for dim in dims):
            raise ValueError(f"SqueezeLayer expects negative dims, got {tuple(dims)}.")
        self.dims = tuple(sorted(dims))

    def forward(self, tensor: torch.Tensor) -> torch.Tensor:
        for dim in self.dims:
            if tensor.shape[dim] != 1:
                raise RuntimeError(
                    f"SqueezeLayer: dimension {dim} of a tensor of shape {tuple(tensor.shape)} is not 1."
                )
            tensor = tensor.squeeze(dim)
        return tensor


class Squeeze2dLayer(SqueezeLayer):
    """Squeezes the two trailing singleton dimensions (the output of a ``(1, 1)`` pooling).

    Examples:
        >>> import torch
        >>> Squeeze2dLayer()(torch.zeros(2, 8, 1, 1)).shape
        torch.Size([2, 8])
    """

    def __init__(self) -> None:
        super().__init__((-1, -2))


def create_on_device(module_class: type[nn.Module] | Callable, device: Any, *args: Any, **kwargs: Any) -> nn.Module:
    """Instantiates ``module_class`` on ``device``, passing ``device=`` only when the class accepts it.

    Args:
        module_class: a module class or any callable returning a module.
        device: the target device, or ``None`` for the default one.
        *args: positional arguments for ``module_class``.
        **kwargs: keyword arguments for ``module_class``.

    Returns:
        The created module.

    Examples:
        >>> from torch import nn
        >>> create_on_device(nn.Linear, "cpu", 3, 4).weight.device.type
        'cpu'
        >>> create_on_device(nn.Tanh, "cpu")
        Tanh()
    """
    if device is None:
        return module_class(*args, **kwargs)
    try:
        return module_class(*args, device=device, **kwargs)
    except TypeError as err:
        if "device" not in str(err):
            raise
        module = module_class(*args, **kwargs)
        return module.to(device) if isinstance(module, nn.Module) else module


def iter_kwargs(kwargs: dict | Sequence[dict] | None, n: int, *, name: str = "kwargs") -> Iterator[dict]:
    """Yields ``n`` fresh kwargs dicts: copies of one dict, or the items of a list of ``n`` dicts.

    Args:
        kwargs: ``None``, one dict shared by every layer, or one dict per layer.
        n: the number of layers.
        name: the argument name, used in error messages.

    Returns:
        An iterator of dicts (each a copy, so callers may pop from it).

    Examples:
        >>> list(iter_kwargs({"a": 1}, 2))
        [{'a': 1}, {'a': 1}]
    """
    if kwargs is None:
        return (dict() for _ in range(n))
    if isinstance(kwargs, dict):
        return (dict(kwargs) for _ in range(n))
    kwargs = list(kwargs)
    if len(kwargs) != n:
        raise ValueError(f"{name} has {len(kwargs)} entries but the network needs {n} (one per layer).")
    return (dict(kw) for kw in kwargs)


def find_depth(depth: int | None, *list_or_ints: Sequence[int] | int) -> int:
    """Returns the network depth, checked against every list-valued argument.

    Args:
        depth: the requested depth, or ``None`` to infer it from the lists.
        *list_or_ints: per-layer arguments (lists) or shared values (ints).

    Returns:
        The depth.

    Examples:
        >>> find_depth(None, [32, 64], 3)
        2
    """
    lengths = {len(item) for item in list_or_ints if isinstance(item, Sequence)}
    if len(lengths) > 1:
        raise ValueError(f"Per-layer arguments have different lengths {sorted(lengths)}; they must match.")
    if depth is None:
        if not lengths:
            raise ValueError("depth must be given when every per-layer argument is a single int.")
        return lengths.pop()
    if lengths and lengths.pop() != depth:
        raise ValueError(f"depth={depth} does not match the length of the per-layer arguments.")
    return depth
