"""Helpers shared by weight updaters and sync schemes: extracting weights and copying them into place."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

__all__ = ["copy_weights_", "same_storage", "to_weights"]


def to_weights(policy_or_weights: Any) -> TensorDictBase:
    """The weights held by ``policy_or_weights`` as a TensorDict.

    Args:
        policy_or_weights: an ``nn.Module`` (its parameters and buffers), a ``TensorDict`` of weights (as
            from ``TensorDict.from_module``) or a ``state_dict`` (flat, dotted keys).

    Returns:
        A TensorDict whose leaves are the weights (the module's own tensors for a module, no copy).

    Examples:
        >>> import torch
        >>> to_weights(torch.nn.Linear(2, 1))["weight"].shape
        torch.Size([1, 2])
    """
    if isinstance(policy_or_weights, torch.nn.Module):
        return TensorDict.from_module(policy_or_weights)
    if isinstance(policy_or_weights, TensorDictBase):
        return policy_or_weights
    if isinstance(policy_or_weights, Mapping):
        return TensorDict(dict(policy_or_weights), []).unflatten_keys(".")
    raise TypeError(
        "weights must be given as an nn.Module, a TensorDict of weights or a state_dict, "
        f"got {type(policy_or_weights).__name__}"
    )


def copy_weights_(dest: TensorDictBase, src: TensorDictBase) -> None:
    """Copies ``src`` into ``dest`` in place (across devices), checking both hold the same entries.

    Args:
        dest: the weights to overwrite.
        src: the new values.

    Examples:
        >>> import torch
        >>> net = torch.nn.Linear(2, 1)
        >>> copy_weights_(to_weights(net), to_weights(net).apply(torch.zeros_like))
        >>> float(net.weight.detach().abs().sum())
        0.0
    """
    dest_keys = set(dest.keys(True, True))
    src_keys = set(src.keys(True, True))
    if dest_keys != src_keys:
        raise KeyError(
            "the new weights do not match the policy's: missing "
            f"{sorted(map(str, dest_keys - src_keys))}, unexpected {sorted(map(str, src_keys - dest_keys))}"
        )
    with torch.no_grad():
        dest.update_(src)


def same_storage(a: TensorDictBase, b: TensorDictBase) -> bool:
    """True when every leaf of ``a`` and ``b`` is the same memory (writing one is writing the other).

    Examples:
        >>> import torch
        >>> net = torch.nn.Linear(2, 1)
        >>> same_storage(to_weights(net), to_weights(net)), same_storage(to_weights(net), to_weights(net).clone())
        (True, False)
    """
    leaves_a, leaves_b = a.items(True, True), dict(b.items(True, True))
    for key, value in leaves_a:
        other = leaves_b.get(key)
        if other is None or other.device != value.device or other.data_ptr() != value.data_ptr():
            return False
    return len(leaves_b) == len(a.keys(True, True))
