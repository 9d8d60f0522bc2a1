"""TorchRL's deprecated spec names, kept as plain aliases of the current classes.

Examples:
    >>> from tdrl.data import Bounded, BoundedTensorSpec
    >>> BoundedTensorSpec is Bounded
    True
"""

from __future__ import annotations

from tdrl.data.tensor_specs.binary import Binary
from tdrl.data.tensor_specs.bounded import Bounded
from tdrl.data.tensor_specs.categorical import Categorical, MultiCategorical
from tdrl.data.tensor_specs.composite import Composite
from tdrl.data.tensor_specs.non_tensor import NonTensor
from tdrl.data.tensor_specs.one_hot import MultiOneHot, OneHot
from tdrl.data.tensor_specs.unbounded import UnboundedContinuous, UnboundedDiscrete

BoundedTensorSpec = Bounded
UnboundedContinuousTensorSpec = UnboundedContinuous
UnboundedDiscreteTensorSpec = UnboundedDiscrete
CompositeSpec = Composite
DiscreteTensorSpec = Categorical
OneHotDiscreteTensorSpec = OneHot
MultiOneHotDiscreteTensorSpec = MultiOneHot
MultiDiscreteTensorSpec = MultiCategorical
BinaryDiscreteTensorSpec = Binary
NonTensorSpec = NonTensor

__all__ = [
    "BinaryDiscreteTensorSpec",
    "BoundedTensorSpec",
    "CompositeSpec",
    "DiscreteTensorSpec",
    "MultiDiscreteTensorSpec",
    "MultiOneHotDiscreteTensorSpec",
    "NonTensorSpec",
    "OneHotDiscreteTensorSpec",
    "UnboundedContinuousTensorSpec",
    "UnboundedDiscreteTensorSpec",
]
