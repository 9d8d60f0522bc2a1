"""``RemoveEmptySpecs``: drops empty ``Composite`` entries (and the empty sub-tensordicts they produce)."""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase, is_tensor_collection

from tdrl.data.tensor_specs import Composite
from tdrl.envs.transforms._base import Transform

__all__ = ["RemoveEmptySpecs"]


def _prune_spec(spec: Composite) -> Composite:
    for key in list(spec.keys()):
        leaf = spec[key]
        if isinstance(leaf, Composite):
            _prune_spec(leaf)
            if leaf.is_empty():
                del spec[key]
    return spec


def _prune_data(data: TensorDictBase) -> TensorDictBase:
    for key in list(data.keys()):
        value = data.get(key)
        if is_tensor_collection(value) and not _is_non_tensor(value):
            _prune_data(value)
            if value.is_empty():
                del data[key]
    return data


def _is_non_tensor(value: Any) -> bool:
    return type(value).__name__ in ("NonTensorData", "NonTensorStack")


class RemoveEmptySpecs(Transform):
    """Removes empty composite specs from every spec of the env, and the empty entries from its outputs.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> out = RemoveEmptySpecs()(TensorDict({"x": torch.zeros(2), "empty": {"deeper": {}}}, []))
        >>> list(out.keys())
        ['x']
    """

    def __init__(self) -> None:
        super().__init__()

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return _prune_data(next_tensordict)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return _prune_data(tensordict_reset)

    def transform_output_spec(self, output_spec: Any) -> Any:
        output_spec = output_spec.clone()
        for part in list(output_spec.keys()):
            output_spec[part] = _prune_spec(output_spec[part])
        return output_spec

    def transform_input_spec(self, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        for part in list(input_spec.keys()):
            input_spec[part] = _prune_spec(input_spec[part])
        return input_spec
