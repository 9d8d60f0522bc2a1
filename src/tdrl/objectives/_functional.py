"""Parameter plumbing of :class:`~tdrl.objectives.LossModule`: parameter slots and ensemble copies."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Sequence
from typing import cast

import torch
from tensordict.utils import NestedKey
from torch import Tensor, nn

__all__ = ["Slots", "as_key", "copy_module", "reinit_copy"]


class Slots:
    """Where each parameter/buffer of a module lives, to swap parameter sets in without ``to_module``."""

    def __init__(self, module: nn.Module, keys: Sequence[tuple[str, ...]]) -> None:
        self.entries: list[tuple[dict, str]] = []
        for key in keys:
            owner = module
            for part in key[:-1]:
                owner = getattr(owner, part)
            store = owner._parameters if key[-1] in owner._parameters else owner._buffers
            self.entries.append((store, key[-1]))

    @contextlib.contextmanager
    def swap(self, values: Sequence[Tensor]) -> Iterator[None]:
        old = [store[name] for store, name in self.entries]
        for (store, name), v in zip(self.entries, values):
            store[name] = v
        try:
            yield
        finally:
            for (store, name), v in zip(self.entries, old):
                store[name] = v


def as_key(key: NestedKey) -> tuple[str, ...]:
    """A nested key as a tuple.

    Examples:
        >>> as_key("a"), as_key(("a", "b"))
        (('a',), ('a', 'b'))
    """
    return (key,) if isinstance(key, str) else cast(tuple[str, ...], tuple(key))


def reinit_copy(module: nn.Module) -> nn.Module:
    """A deep copy of ``module`` with freshly initialised parameters (``reset_parameters`` where defined).

    Examples:
        >>> net = nn.Linear(2, 2)
        >>> bool((reinit_copy(net).weight != net.weight).any())
        True
    """
    clone = copy.deepcopy(module)
    with torch.no_grad():
        for sub in clone.modules():
            reset = getattr(sub, "reset_parameters", None)
            if callable(reset):
                reset()
    return clone


def copy_module(module: nn.Module) -> nn.Module:
    """A deep copy of a network (used by :meth:`LossModule.get_stateful_net`).

    Examples:
        >>> net = nn.Linear(2, 2)
        >>> copy_module(net) is net
        False
    """
    return copy.deepcopy(module)
