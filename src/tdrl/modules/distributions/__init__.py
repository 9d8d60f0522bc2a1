"""Action distributions (``TanhNormal``, ``OneHotCategorical``...) and ``NormalParamExtractor``.

``NormalParamExtractor`` is tensordict's own module (TorchRL re-exports it the same way).
"""

from tensordict.nn import NormalParamExtractor

from tdrl.modules.distributions.continuous import (
    Delta,
    IndependentNormal,
    TanhDelta,
    TanhNormal,
    same_squashing,
)
from tdrl.modules.distributions.discrete import (
    MaskedCategorical,
    MaskedOneHotCategorical,
    OneHotCategorical,
    ReparamGradientStrategy,
)
from tdrl.modules.distributions.llm import LLMMaskedCategorical
from tdrl.modules.distributions.ordinal import OneHotOrdinal, Ordinal
from tdrl.modules.distributions.param_wrapper import NormalParamWrapper
from tdrl.modules.distributions.registry import HAS_ENTROPY, distributions_maps
from tdrl.modules.distributions.truncated_normal import TruncatedNormal
from tdrl.modules.distributions.utils import has_analytic_entropy, has_analytic_kl

__all__ = [
    "Delta",
    "HAS_ENTROPY",
    "IndependentNormal",
    "LLMMaskedCategorical",
    "MaskedCategorical",
    "MaskedOneHotCategorical",
    "NormalParamExtractor",
    "NormalParamWrapper",
    "OneHotCategorical",
    "OneHotOrdinal",
    "Ordinal",
    "ReparamGradientStrategy",
    "TanhDelta",
    "TanhNormal",
    "TruncatedNormal",
    "distributions_maps",
    "has_analytic_entropy",
    "has_analytic_kl",
    "same_squashing",
]
