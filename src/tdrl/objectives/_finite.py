"""The opt-in NaN/inf guard of losses and value estimators: one message format naming key and index.

A NaN reward spreads backwards through a GAE recursion (one NaN reward makes most of a trajectory's
advantages NaN) and a NaN loss silently poisons the weights, so the guard names the *first* bad entry of
the inputs, where the problem entered, not only the output. It syncs with the device, so it is opt-in:
``check_finite=True`` on an estimator, ``loss.check_finite = True``, or the ``check_finite()`` context.
"""

from __future__ import annotations

import math

import torch
from tensordict.utils import NestedKey

__all__ = ["CHECK_FINITE", "assert_finite", "non_finite_message"]

#: Set by the ``tdrl.objectives.check_finite()`` context: every loss and estimator checks while it is on.
CHECK_FINITE = [False]


def non_finite_message(key: NestedKey, value: torch.Tensor) -> str | None:
    """``None`` when ``value`` is finite, else a description of its first NaN/inf entry.

    Examples:
        >>> non_finite_message(("next", "reward"), torch.tensor([[0.0, float("nan")]]))
        "('next', 'reward') has NaN at index (0, 1) (1 of 2 values are not finite)"
        >>> non_finite_message("x", torch.ones(3)) is None
        True
    """
    if not value.is_floating_point():
        return None
    finite = torch.isfinite(value)
    if bool(finite.all()):
        return None
    bad = ~finite
    index = tuple(int(i) for i in bad.nonzero()[0])
    item = float(value[index].detach())
    kind = "NaN" if math.isnan(item) else ("inf" if item > 0 else "-inf")
    return f"{key!r} has {kind} at index {index} ({int(bad.sum())} of {value.numel()} values are not finite)"


def assert_finite(owner: str, key: NestedKey, value: torch.Tensor | None, what: str = "input") -> None:
    """Raises ``ValueError`` naming ``owner``, ``key`` and the first bad index when ``value`` is not finite.

    Examples:
        >>> assert_finite("GAE", "advantage", torch.tensor([1.0, float("inf")]), "output")
        Traceback (most recent call last):
        ...
        ValueError: GAE: output 'advantage' has inf at index (1,) (1 of 2 values are not finite)
    """
    if value is None or not isinstance(value, torch.Tensor):
        return
    if torch.compiler.is_compiling():
        raise RuntimeError("check_finite is an eager-mode check; disable it under torch.compile")
    message = non_finite_message(key, value)
    if message is not None:
        raise ValueError(f"{owner}: {what} {message}")
