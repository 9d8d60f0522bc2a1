"""gymnasium spaces -> tdrl specs, with TorchRL's conventions.

* ``Box`` -> ``Bounded`` (``Unbounded`` when every bound is infinite, or for ``uint8`` images in
  ``[0, 255]``), keeping the space's dtype (float64 stays float64);
* ``Discrete`` -> ``OneHot`` (int64), or ``Categorical`` (shape ``()``) with ``categorical_action_encoding``;
* ``MultiDiscrete`` -> ``MultiOneHot`` / ``MultiCategorical``; ``MultiBinary`` -> ``Binary`` (int8);
* ``Dict`` -> ``Composite``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tdrl.data import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    TensorSpec,
    Unbounded,
)

__all__ = ["numpy_to_torch_dtype", "register_gym_spec_conversion", "space_to_spec"]

# User conversions (TorchRL's ``register_gym_spec_conversion``): a space class, or a dotted name under
# ``gymnasium.spaces``, mapped to ``fn(space, dtype=, device=, categorical_action_encoding=,
# remap_state_to_observation=, batch_size=)``. Looked up (closest class in the MRO first) before the built-ins.
_CONVERSIONS: dict[Any, Callable[..., TensorSpec]] = {}


def register_gym_spec_conversion(spec_type: Any) -> Callable[[Callable[..., TensorSpec]], Callable[..., TensorSpec]]:
    """Decorator registering how a gymnasium space type converts to a spec (overrides the built-in rule).

    Args:
        spec_type: the space class, or its dotted name under ``gymnasium.spaces`` (e.g. ``"Text"``).

    Examples:
        >>> import gymnasium as gym
        >>> from tdrl.data import NonTensor
        >>> @register_gym_spec_conversion("Text")
        ... def text_to_spec(spec, dtype=None, device=None, batch_size=(), **kwargs):
        ...     return NonTensor(shape=batch_size, device=device)
        >>> type(space_to_spec(gym.spaces.Text(8))).__name__
        'NonTensor'
        >>> _ = _CONVERSIONS.pop("Text")  # (the example leaves the registry as it found it)
    """

    def decorator(fn: Callable[..., TensorSpec]) -> Callable[..., TensorSpec]:
        _CONVERSIONS[spec_type] = fn
        return fn

    return decorator


def _registered(space: Any) -> Callable[..., TensorSpec] | None:
    if not _CONVERSIONS:
        return None
    from gymnasium import spaces

    classes: dict[type, Any] = {}
    for key in _CONVERSIONS:
        if isinstance(key, str):
            node: Any = spaces
            for part in key.split("."):
                node = getattr(node, part, None)
                if node is None:
                    break
            if isinstance(node, type):
                classes[node] = key
        elif isinstance(key, type):
            classes[key] = key
    for base in type(space).mro():
        for cls, key in classes.items():
            if base is cls:
                return _CONVERSIONS[key]
    return None


def numpy_to_torch_dtype(dtype: Any) -> torch.dtype:
    """The torch dtype of a numpy dtype (``np.float64`` -> ``torch.float64``).

    Examples:
        >>> numpy_to_torch_dtype(np.uint8)
        torch.uint8
    """
    return torch.from_numpy(np.zeros(0, dtype=np.dtype(dtype))).dtype


def space_to_spec(
    space: Any,
    *,
    categorical_action_encoding: bool = False,
    device: Any = None,
    batch: tuple[int, ...] = (),
) -> TensorSpec:
    """Converts a gymnasium space to a tdrl spec (``batch`` dims prepended).

    Args:
        space: a ``gymnasium.spaces.Space``.
        categorical_action_encoding: discrete spaces as indices instead of one-hot.
        device: device of the spec.
        batch: leading batch dims (vector envs).

    Returns:
        The spec.

    Examples:
        >>> import gymnasium as gym
        >>> space_to_spec(gym.spaces.Discrete(3)).shape
        torch.Size([3])
        >>> space_to_spec(gym.spaces.Discrete(3), categorical_action_encoding=True, batch=(4,)).shape
        torch.Size([4])
    """
    from gymnasium import spaces

    batch = tuple(batch)
    custom = _registered(space)
    if custom is not None:
        return custom(
            space,
            dtype=None,
            device=device,
            categorical_action_encoding=categorical_action_encoding,
            remap_state_to_observation=False,
            batch_size=torch.Size(batch),
        )
    if isinstance(space, spaces.Dict):
        return Composite(
            {
                k: space_to_spec(
                    v, categorical_action_encoding=categorical_action_encoding, device=device, batch=batch
                )
                for k, v in space.spaces.items()
            },
            shape=batch,
            device=device,
        )
    if isinstance(space, spaces.Tuple):
        return _tuple_to_spec(space, categorical_action_encoding, device, batch)
    if isinstance(space, spaces.Discrete):
        if categorical_action_encoding:
            return Categorical(int(space.n), shape=batch, device=device, dtype=torch.int64)
        return OneHot(int(space.n), shape=(*batch, int(space.n)), device=device, dtype=torch.int64)
    if isinstance(space, spaces.MultiDiscrete):
        nvec = [int(n) for n in np.asarray(space.nvec).reshape(-1)]
        if categorical_action_encoding:
            return MultiCategorical(nvec, shape=(*batch, len(nvec)), device=device, dtype=torch.int64)
        return MultiOneHot(nvec, shape=(*batch, sum(nvec)), device=device, dtype=torch.int64)
    if isinstance(space, spaces.MultiBinary):
        shape = tuple(np.atleast_1d(space.n).tolist())
        return Binary(shape=(*batch, *shape), device=device, dtype=torch.int8)
    if isinstance(space, spaces.Box):
        return _box_to_spec(space, device=device, batch=batch)
    raise TypeError(
        f"cannot convert gymnasium space {type(space).__name__} ({space}); supported: Box, Discrete, "
        "MultiDiscrete, MultiBinary, Dict, Tuple (of like spaces)"
    )


def _tuple_to_spec(space: Any, categorical: bool, device: Any, batch: tuple[int, ...]) -> TensorSpec:
    """A ``Tuple`` of like spaces (one per agent, as LBForaging's) as one spec stacked on a new dim."""
    from gymnasium import spaces

    subs = list(space.spaces)
    first = subs[0] if subs else None
    if isinstance(first, spaces.Box) and all(
        isinstance(s, spaces.Box) and s.shape == first.shape and s.dtype == first.dtype for s in subs
    ):
        low = np.stack([np.asarray(s.low) for s in subs])
        high = np.stack([np.asarray(s.high) for s in subs])
        return _box_to_spec(spaces.Box(low, high, dtype=first.dtype), device=device, batch=batch)
    if isinstance(first, spaces.Discrete) and all(
        isinstance(s, spaces.Discrete) and s.n == first.n and s.start == first.start for s in subs
    ):
        inner = space_to_spec(first, categorical_action_encoding=categorical, device=device, batch=(len(subs),))
        return inner.expand(*batch, *inner.shape) if batch else inner
    raise TypeError(
        f"cannot convert gymnasium Tuple space {space}: only tuples of Box spaces of one shape and dtype, or "
        "of Discrete spaces of one size, are supported"
    )


def _box_to_spec(space: Any, *, device: Any, batch: tuple[int, ...]) -> TensorSpec:
    dtype = numpy_to_torch_dtype(space.dtype)
    shape = (*batch, *space.shape)
    low = torch.as_tensor(np.array(space.low, dtype=np.float64))
    high = torch.as_tensor(np.array(space.high, dtype=np.float64))
    image = dtype == torch.uint8 and bool((low == 0).all()) and bool((high == 255).all())
    if image or (bool(torch.isinf(low).all()) and bool(torch.isinf(high).all())):
        return Unbounded(shape=shape, dtype=dtype, device=device)
    low = low.to(dtype).expand(shape).clone()
    high = high.to(dtype).expand(shape).clone()
    return Bounded(low=low, high=high, shape=shape, dtype=dtype, device=device)
