"""Collects the ``TensorDictPrimer`` transforms a policy's stateful submodules need."""

from __future__ import annotations

import warnings

from torch import nn

from tdrl.envs.transforms import Compose, InitTracker, TensorDictPrimer

__all__ = ["get_env_transforms_from_module", "get_primers_from_module"]


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


def get_env_transforms_from_module(module: nn.Module, init_key: str = "is_init") -> InitTracker | Compose:
    """The env transforms a (recurrent) policy needs: an ``InitTracker``, then its primers if it has any.

    Pass the result to ``TransformedEnv(base_env, ...)``.

    Args:
        module: the policy (or any parent module).
        init_key: the reset indicator the tracker writes (the policy's ``is_init`` key). Defaults to ``"is_init"``.

    Returns:
        ``Compose(InitTracker, primer)`` when a submodule needs a primer, else the bare ``InitTracker``.

    Examples:
        >>> from tdrl.modules import GRUModule
        >>> transforms = get_env_transforms_from_module(GRUModule(input_size=3, hidden_size=4, in_key="x", out_key="y"))
        >>> [type(t).__name__ for t in transforms]
        ['InitTracker', 'TensorDictPrimer']
    """
    tracker = InitTracker(init_key=init_key)
    primer = get_primers_from_module(module, warn=False)
    return tracker if primer is None else Compose(tracker, primer)
