"""Positive mappings for scale parameters, e.g. ``mappings("biased_softplus_1.0")``.

These are tensordict's (``tensordict.nn.utils``), the same functions ``NormalParamExtractor`` uses:
``biased_softplus(bias, min_val)(x) = softplus(x + inv_softplus(bias - min_val)) + min_val``.
"""

from __future__ import annotations

from tensordict.nn.utils import biased_softplus, expln, inv_softplus, mappings

__all__ = ["biased_softplus", "expln", "inv_softplus", "mappings"]
