"""Tensor specs: what the tensors of a TensorDict may contain (shape, dtype, device, value space)."""

from tdrl.data.tensor_specs._base import DEVICE_TYPING, TensorSpec
from tdrl.data.tensor_specs.aliases import (
    BinaryDiscreteTensorSpec,
    BoundedTensorSpec,
    CompositeSpec,
    DiscreteTensorSpec,
    MultiDiscreteTensorSpec,
    MultiOneHotDiscreteTensorSpec,
    NonTensorSpec,
    OneHotDiscreteTensorSpec,
    UnboundedContinuousTensorSpec,
    UnboundedDiscreteTensorSpec,
)
from tdrl.data.tensor_specs.binary import Binary
from tdrl.data.tensor_specs.bounded import Bounded, BoundedContinuous, BoundedDiscrete
from tdrl.data.tensor_specs.categorical import Categorical, MultiCategorical
from tdrl.data.tensor_specs.choice import Choice
from tdrl.data.tensor_specs.composite import Composite
from tdrl.data.tensor_specs.non_tensor import NonTensor
from tdrl.data.tensor_specs.one_hot import MultiOneHot, OneHot
from tdrl.data.tensor_specs.spaces import BinaryBox, Box, BoxList, CategoricalBox, ContinuousBox, DiscreteBox
from tdrl.data.tensor_specs.stacked import Stacked, StackedComposite, stack_specs
from tdrl.data.tensor_specs.unbounded import Unbounded, UnboundedContinuous, UnboundedDiscrete

__all__ = [
    "DEVICE_TYPING",
    "Binary",
    "BinaryBox",
    "BinaryDiscreteTensorSpec",
    "Bounded",
    "BoundedContinuous",
    "BoundedDiscrete",
    "BoundedTensorSpec",
    "Box",
    "BoxList",
    "Categorical",
    "CategoricalBox",
    "Choice",
    "Composite",
    "CompositeSpec",
    "ContinuousBox",
    "DiscreteBox",
    "DiscreteTensorSpec",
    "MultiCategorical",
    "MultiDiscreteTensorSpec",
    "MultiOneHot",
    "MultiOneHotDiscreteTensorSpec",
    "NonTensor",
    "NonTensorSpec",
    "OneHot",
    "OneHotDiscreteTensorSpec",
    "Stacked",
    "StackedComposite",
    "TensorSpec",
    "Unbounded",
    "UnboundedContinuous",
    "UnboundedContinuousTensorSpec",
    "UnboundedDiscrete",
    "UnboundedDiscreteTensorSpec",
    "stack_specs",
]
