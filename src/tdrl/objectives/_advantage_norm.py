"""Advantage normalisation shared by A2C and the PPO family: a running normaliser (``advantage_norm``) and
the masked batch standardisation of ``normalize_advantage``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from tensordict import TensorDictBase
from torch import Tensor

if TYPE_CHECKING:
    from tdrl.objectives.common import LossModule

__all__ = ["AdvantageNorm", "check_advantage_norm", "masked_standardize", "scale_advantage"]


@runtime_checkable
class AdvantageNorm(Protocol):
    """What a loss needs from a running value normaliser (TorchRL's ``ValueNorm`` has it)."""

    def update(self, value_target: Tensor) -> None:
        """Folds a batch of value targets into the running statistics."""

    def scale(self) -> Tensor:
        """The current scale of the returns."""


def check_advantage_norm(norm: object) -> None:
    """Raises ``TypeError`` unless ``norm`` is ``None`` or has ``update`` and ``scale`` methods.

    Examples:
        >>> check_advantage_norm(None)
    """
    if norm is not None and not isinstance(norm, AdvantageNorm):
        raise TypeError(
            f"advantage_norm must provide update(value_target) and scale() (e.g. a ValueNorm), "
            f"got {type(norm).__name__}"
        )


def scale_advantage(loss: LossModule, advantage: Tensor, td: TensorDictBase, *, update: bool) -> Tensor:
    """``advantage / loss.advantage_norm.scale()``; with ``update``, the normaliser first sees the valid
    rows of the value target (rows masked out of the loss are left out of the statistics)."""
    norm = loss.advantage_norm
    if update:
        key = loss.tensor_keys.value_target
        value_target = td.get(key, None)
        if value_target is None:
            raise KeyError(
                f"{type(loss).__name__}: advantage_norm needs the value target {key!r} to update its "
                f"statistics; the input holds {sorted(map(str, td.keys(True, True)))}"
            )
        mask = loss._mask(td)
        if mask is not None:
            mask = mask.bool()
            while mask.ndim >= value_target.ndim and mask.shape[-1] == 1:
                mask = mask.squeeze(-1)
            value_target = value_target[mask]
        norm.update(value_target)
    return advantage / norm.scale()


def masked_standardize(advantage: Tensor, valid: Tensor, dims: Sequence[int]) -> Tensor:
    """Standardises ``advantage`` over ``dims`` counting only ``valid`` positions (population std,
    floored at 1e-4, as TorchRL does with a ``"shifted_valid"`` mask).

    Examples:
        >>> import torch
        >>> a = torch.tensor([[1.0], [3.0], [100.0]])
        >>> masked_standardize(a, torch.tensor([True, True, False]), [0, 1])[:2].squeeze(-1)
        tensor([-1.,  1.])
    """
    while valid.ndim < advantage.ndim:
        valid = valid.unsqueeze(-1)
    mask = valid.expand_as(advantage).to(advantage.dtype)
    count = mask.sum(dim=list(dims), keepdim=True).clamp_min(1)
    loc = (advantage * mask).sum(dim=list(dims), keepdim=True) / count
    var = ((advantage - loc).pow(2) * mask).sum(dim=list(dims), keepdim=True) / count
    return (advantage - loc) / var.sqrt().clamp_min(1e-4)
