"""Name -> class map of the distributions and whether each has an analytic entropy."""

from __future__ import annotations

from torch import distributions as D

from tdrl.modules.distributions.continuous import Delta, IndependentNormal, TanhDelta, TanhNormal
from tdrl.modules.distributions.discrete import MaskedCategorical, MaskedOneHotCategorical, OneHotCategorical
from tdrl.modules.distributions.ordinal import OneHotOrdinal, Ordinal
from tdrl.modules.distributions.truncated_normal import TruncatedNormal

__all__ = ["distributions_maps", "HAS_ENTROPY"]

_ALL = (Delta, IndependentNormal, TanhDelta, TanhNormal, TruncatedNormal, MaskedCategorical,
        MaskedOneHotCategorical, OneHotCategorical, Ordinal, OneHotOrdinal)

#: ``str(cls).lower()`` -> class, the keys TorchRL uses (e.g. ``"<class '...tanhnormal'>"``), plus bare names.
distributions_maps: dict[str, type] = {
    **{str(cls).lower(): cls for cls in _ALL},
    **{cls.__name__.lower(): cls for cls in _ALL},
}

#: Whether ``entropy()`` is analytic; losses estimate it by sampling otherwise.
HAS_ENTROPY: dict[type, bool] = {
    Delta: False,
    IndependentNormal: True,
    TanhDelta: False,
    TanhNormal: False,
    TruncatedNormal: True,
    MaskedCategorical: True,
    MaskedOneHotCategorical: True,
    OneHotCategorical: True,
    Ordinal: True,
    OneHotOrdinal: True,
    D.Categorical: True,
    D.Normal: True,
}
