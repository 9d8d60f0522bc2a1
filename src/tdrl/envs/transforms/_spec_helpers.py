"""Decorators that lift a per-leaf spec map to the env's composite specs.

TorchRL's custom-transform tutorials (``pendulum``, many user transforms) write
``transform_observation_spec`` for a single leaf and decorate it with ``_apply_to_composite``, imported from
``torchrl.envs.transforms.transforms``; the same private names are importable here so that code ports
unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from tdrl.data.tensor_specs import Composite

__all__ = ["_apply_to_composite", "_apply_to_composite_inv"]

LeafMap = Callable[[Any, Any], Any]


def _apply_to_composite(function: LeafMap) -> LeafMap:
    """Turns ``function(self, leaf_spec) -> leaf_spec`` into a ``Composite -> Composite`` spec method.

    Every ``(in_key, out_key)`` pair of the transform whose ``in_key`` is in the composite gets
    ``out_key = function(self, spec[in_key].clone())``; a non-composite spec is passed straight through.

    Examples:
        >>> import torch
        >>> from tdrl.data import Bounded, Composite, Unbounded
        >>> from tdrl.envs.transforms import Transform
        >>> class Sin(Transform):
        ...     @_apply_to_composite
        ...     def transform_observation_spec(self, spec):
        ...         return Bounded(-1.0, 1.0, spec.shape, dtype=spec.dtype)
        >>> spec = Sin(in_keys=["th"], out_keys=["sin"]).transform_observation_spec(Composite(th=Unbounded(())))
        >>> sorted(spec.keys()), type(spec["sin"]).__name__
        (['sin', 'th'], 'BoundedContinuous')
    """

    @functools.wraps(function)
    def mapped(self: Any, spec: Any) -> Any:
        if not isinstance(spec, Composite):
            return function(self, spec)
        spec = spec.clone()
        keys = set(spec.keys(True, True))
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in keys:
                spec[out_key] = function(self, spec[in_key].clone())
        return spec

    return mapped


def _apply_to_composite_inv(function: LeafMap) -> LeafMap:
    """Turns ``function(self, leaf_spec) -> leaf_spec`` into an ``input_spec -> input_spec`` method.

    For each ``(in_key_inv, out_key_inv)`` pair, the leaf found under ``in_key_inv`` in the action spec,
    else the state spec, is mapped and stored under ``out_key_inv`` (the old key is removed when the two
    differ). Given a bare action or state composite (no ``full_action_spec`` entry), that composite is
    mapped directly.

    Examples:
        >>> import torch
        >>> from tdrl.data import Bounded, Composite
        >>> from tdrl.envs.transforms import Transform
        >>> class Half(Transform):
        ...     @_apply_to_composite_inv
        ...     def transform_input_spec(self, spec):
        ...         return spec.clone().to(torch.float16)
        >>> inp = Composite(full_action_spec=Composite(action=Bounded(-1.0, 1.0, (2,))), full_state_spec=Composite())
        >>> Half(in_keys_inv=["action"]).transform_input_spec(inp)["full_action_spec", "action"].dtype
        torch.float16
    """

    @functools.wraps(function)
    def mapped(self: Any, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        if "full_action_spec" in input_spec.keys():
            parts = [input_spec["full_action_spec"]]
            if "full_state_spec" in input_spec.keys():
                parts.append(input_spec["full_state_spec"])
        else:
            parts = [input_spec]
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            for part in parts:
                if in_key in part.keys(True, True):
                    part[out_key] = function(self, part[in_key].clone())
                    if in_key != out_key:
                        del part[in_key]
                    break
        return input_spec

    return mapped
