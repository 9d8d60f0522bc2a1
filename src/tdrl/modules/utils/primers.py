"""Collects the ``TensorDictPrimer`` transforms a policy's stateful submodules need."""

from __future__ import annotations

import warnings

from torch import nn

from tdrl.envs.transforms import Compose, TensorDictPrimer

__all__ = ["get_primers_from_module"]


def get_primers_from_module(module: nn.Module, warn: bool = True,
                            strict: bool = True) -> TensorDictPrimer | Compose | None:
    """Gathers the primers of every submodule with ``make_tensordict_primer()`` (RNNs, consistent dropout...).

    Args:
        module: the policy (or any parent module).
        warn: warn when no submodule needs a primer. Defaults to ``True``.
        strict: let ``make_tensordict_primer()`` errors propagate; with ``False`` they are collected into one
            warning and the other submodules' primers are still returned.

    Returns:
        The single primer, a ``Compose`` of several (each keeps its own default values), or ``None``.

    Examples:
        >>> from tdrl.modules import GRUModule
        >>> primer = get_primers_from_module(GRUModule(input_size=3, hidden_size=4, in_key="x", out_key="y"))
        >>> list(primer.primers.keys())
        ['recurrent_state']
    """
    primers = []
    failures = []
    for submodule in module.modules():
        make = getattr(submodule, "make_tensordict_primer", None)
        if make is None:
            continue
        try:
            primer = make()
        except Exception as err:
            if strict:
                raise
            failures.append(f"{type(submodule).__name__}: {err}")
            continue
        if primer is not None:
            primers.append(primer)
    if failures:
        warnings.warn("get_primers_from_module skipped submodules whose primer failed: " + "; ".join(failures),
                      stacklevel=2)
    if not primers:
        if warn:
            warnings.warn(f"No primers found in {type(module).__name__}.", stacklevel=2)
        return None
    return primers[0] if len(primers) == 1 else Compose(*primers)
