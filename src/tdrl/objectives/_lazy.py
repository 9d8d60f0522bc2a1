"""Target networks of lazy layers (``LazyLinear``, an ``MLP`` without ``in_features``).

Their parameters have no shape until the first forward, so a loss cannot copy them into its target set at
construction. The loss records such networks and, at its first call, runs each once on a copy of the input
(which materializes the parameters in place, the same tensors the loss holds) and then makes the targets.
TorchRL 0.14.1 also defers the copies until the parameters exist (its getting-started-5 tutorial builds
``DQNLoss(delay_value=True)`` and ``SoftUpdate`` on a lazy ``MLP``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch
from tensordict import TensorDictBase
from torch.nn.parameter import is_lazy

if TYPE_CHECKING:
    from tdrl.objectives.common import LossModule

__all__ = ["has_lazy", "materialize_lazy_targets"]


def has_lazy(params: TensorDictBase) -> bool:
    """Whether any entry of ``params`` is an uninitialized (lazy) parameter or buffer.

    Examples:
        >>> from tensordict import TensorDict
        >>> has_lazy(TensorDict.from_module(torch.nn.LazyLinear(2))), has_lazy(TensorDict.from_module(torch.nn.Linear(1, 2)))
        (True, False)
    """
    return any(is_lazy(cast(torch.Tensor, v)) for v in params.values(True, True))


def materialize_lazy_targets(loss: LossModule, tensordict: TensorDictBase) -> None:
    """Materializes the lazy networks of ``loss`` on ``tensordict`` and makes their target copies."""
    for name in sorted(loss._lazy_targets):
        params = cast(TensorDictBase, getattr(loss, name + "_params"))
        if has_lazy(params):
            with torch.no_grad():
                loss.__dict__[name](tensordict.copy())
        if has_lazy(params):
            raise RuntimeError(f"{type(loss).__name__}: calling {name} left some of its lazy parameters uninitialized")
        loss._set_target(name, params)
        loss._lazy_targets.discard(name)
