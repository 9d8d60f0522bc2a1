"""Networks evaluated on repeated rows: run the part that sees each distinct row once, then repeat.

CQL scores ``num_random`` sampled actions per observation. The actor's deterministic part and the
action-independent prefix of a Q network (a shared observation trunk) give the same output for every copy
of a row, so they run on the distinct rows and their outputs are repeated (``index_select``) before the
part that reads the action, or before sampling. Values are those of the repeated computation; gradients
reach the prefix summed over the copies, as they would through the repeated rows. ``pure_split`` is the
split for prefixes that may stand for several calls (no dropout or batch norm; see ``_ensemble_heads.py``).
"""

from __future__ import annotations

from typing import cast

from tensordict import TensorDict, TensorDictBase
from tensordict.nn import (
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModuleBase,
    TensorDictSequential,
)
from tensordict.utils import NestedKey
from torch import Tensor, nn

__all__ = ["dist_split", "gather_rows", "is_pure", "pure_split", "split_before_key"]

_STATEFUL = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._NormBase)


def split_before_key(
    network: TensorDictModuleBase, key: NestedKey | None
) -> tuple[TensorDictSequential, TensorDictSequential] | None:
    """``(prefix, suffix)`` of a sequence where the prefix does not read ``key`` and the suffix reads
    nothing else the prefix did not see or write; ``None`` when there is no such split.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> net = TensorDictSequential(Mod(torch.nn.Linear(3, 4), ["obs"], ["h"]),
        ...     Mod(lambda h, a: h.sum(-1, keepdim=True) + a, ["h", "action"], ["q"]))
        >>> prefix, suffix = split_before_key(net, "action")
        >>> prefix.out_keys, suffix.in_keys
        (['h'], ['h', 'action'])
    """
    if type(network) is not TensorDictSequential or len(network.module) < 2:
        return None
    modules = cast(list[TensorDictModuleBase], list(network.module))
    k = next((i for i, m in enumerate(modules) if key in m.in_keys), None)
    if not k:
        return None
    prefix, suffix = TensorDictSequential(*modules[:k]), TensorDictSequential(*modules[k:])
    known = set(prefix.in_keys) | set(prefix.out_keys) | {key}
    if any(x not in known for x in suffix.in_keys) or key in prefix.out_keys:
        return None
    return prefix, suffix


def dist_split(
    actor: TensorDictModuleBase,
) -> tuple[TensorDictSequential, ProbabilisticTensorDictModule] | None:
    """``(deterministic part, distribution module)`` of a probabilistic sequence, else ``None``."""
    if not isinstance(actor, ProbabilisticTensorDictSequential) or len(actor.module) < 2:
        return None
    last = actor.module[-1]
    if type(last) is not ProbabilisticTensorDictModule:
        return None
    return TensorDictSequential(*actor.module[:-1]), last


def gather_rows(td: TensorDictBase, keys: list[NestedKey], index: Tensor) -> TensorDict:
    """A new one-dimensional TensorDict holding rows ``index`` of the entries ``keys`` of ``td``."""
    return TensorDict({k: td.get(k).index_select(0, index) for k in keys}, batch_size=[index.shape[0]])


def pure_split(
    network: TensorDictModuleBase, key: NestedKey | None
) -> tuple[TensorDictSequential, TensorDictSequential] | None:
    """``split_before_key(network, key)`` when the prefix is deterministic and keeps no running state
    (no dropout, no batch norm): only then may one prefix output stand for several calls.

    Examples:
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> net = TensorDictSequential(Mod(nn.Linear(3, 4), ["obs"], ["h"]),
        ...     Mod(lambda h, a: h.sum(-1, keepdim=True) + a, ["h", "action"], ["q"]))
        >>> pure_split(net, "action") is not None
        True
        >>> noisy = TensorDictSequential(Mod(nn.Dropout(0.1), ["obs"], ["h"]), net.module[1])
        >>> pure_split(noisy, "action") is None
        True
    """
    split = split_before_key(network, key)
    if split is None or not is_pure(split[0]):
        return None
    return split


def is_pure(module: nn.Module) -> bool:
    """No dropout and no batch norm anywhere in ``module``: calls on the same input give the same output
    and change no state.

    Examples:
        >>> is_pure(nn.Sequential(nn.Linear(2, 2), nn.Tanh())), is_pure(nn.Dropout())
        (True, False)
    """
    return not any(isinstance(m, _STATEFUL) for m in module.modules())
