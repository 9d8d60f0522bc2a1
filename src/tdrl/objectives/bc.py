"""Behaviour cloning: the actor imitates the dataset's (expert) actions.

Pomerleau, "ALVINN" (1988) / Bain & Sammut, "A Framework for Behavioural Cloning" (1995). The loss is an
elementwise regression, a cross-entropy over logits, or the negative log-likelihood of the expert action
under the actor's distribution, chosen from ``loss_function`` or, by default, from the data and the actor.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.objectives.common import LossModule
from tdrl.objectives.utils import check_reduction

__all__ = ["BCLoss"]

_ELEMENTWISE: dict[str, Callable[..., Tensor]] = {
    "l1": F.l1_loss, "l2": F.mse_loss, "mse": F.mse_loss, "smooth_l1": F.smooth_l1_loss,
}
_DIST_PARAMS = ("loc", "scale", "logits", "probs")


def _cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    return F.cross_entropy(logits, target.squeeze(-1) if target.ndim > 1 else target, reduction="none")


class BCLoss(LossModule["BCLoss._AcceptedKeys"]):
    """Behaviour-cloning loss ``loss_bc`` between the actor's output and the stored ``"action"``.

    Without ``loss_function``: integer actions give a cross-entropy over the logits the actor writes at the
    action key; an actor writing distribution parameters (``loc``/``scale``/``logits``/``probs``) gives the
    negative log-likelihood of the expert action; otherwise the mean squared error of the predicted action.

    Args:
        actor_network: the policy; writes its prediction at the action key (or is probabilistic).

    Keyword Args:
        loss_function: ``"l1"``, ``"l2"``/``"mse"``, ``"smooth_l1"``, ``"cross_entropy"``, a callable
            ``(prediction, expert) -> elementwise loss``, or ``None`` (chosen as above).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Keys (``set_keys``): ``action`` (expert action, and where the actor writes its prediction) and
    ``pad_mask`` (``True`` marks padding excluded from the loss; ``None`` by default).

    Examples:
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> loss = BCLoss(Mod(torch.nn.Linear(3, 2), ["observation"], ["action"]), loss_function="l2")
        >>> td = TensorDict({"observation": torch.randn(5, 3), "action": torch.randn(5, 2)}, [5])
        >>> loss(td)["loss_bc"].shape
        torch.Size([])
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`BCLoss`."""

        action: NestedKey = "action"
        pad_mask: NestedKey | None = None

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        *,
        loss_function: Callable[[Tensor, Tensor], Tensor]
        | Literal["l1", "l2", "mse", "smooth_l1", "cross_entropy"]
        | None = None,
        reduction: Literal["mean", "sum", "none"] | None = None,
    ) -> None:
        super().__init__()
        if isinstance(loss_function, str) and loss_function not in (*_ELEMENTWISE, "cross_entropy"):
            raise ValueError(
                f"BCLoss: unsupported loss_function {loss_function!r}; "
                f"choose from {[*_ELEMENTWISE, 'cross_entropy']} or pass a callable"
            )
        self.reduction = check_reduction(reduction)
        self.loss_function = loss_function
        self.convert_to_functional(actor_network, "actor_network")

    def _collect_in_keys(self) -> list[NestedKey]:
        keys = [self._tensor_keys.action, *self.actor_network.in_keys]
        if self._tensor_keys.pad_mask is not None:
            keys.append(self._tensor_keys.pad_mask)
        return keys

    def _out_keys(self) -> list[str]:
        return ["loss_bc"]

    def _prediction(self, td: TensorDictBase, expert: Tensor) -> Tensor:
        key = self._tensor_keys.action
        pred = td.get(key)
        if pred is not expert:
            return pred
        legacy = td.get("action", None)
        if legacy is not None and legacy is not expert:
            warnings.warn(
                f"BCLoss: the actor wrote its prediction at 'action' while the loss's action key is {key!r}; "
                "make the actor's out_keys match the loss's action key (reading 'action' is deprecated, "
                "as in TorchRL).",
                FutureWarning,
                stacklevel=3,
            )
            return legacy
        raise RuntimeError(
            f"BCLoss: the actor wrote no prediction at {key!r} (its out_keys are "
            f"{list(getattr(self.actor_network, 'out_keys', []))}); make them include the loss's action key"
        )

    def _elementwise(self, td: TensorDictBase, expert: Tensor) -> Tensor:
        td = self._call("actor_network", td)
        pred = self._prediction(td, expert)
        fn = self.loss_function
        if fn == "cross_entropy":
            return _cross_entropy(pred, expert)
        if isinstance(fn, str):
            return _ELEMENTWISE[fn](pred, expert, reduction="none")
        assert fn is not None  # _elementwise runs only with a loss_function
        return fn(pred, expert)

    def _default(self, td: TensorDictBase, expert: Tensor) -> Tensor:
        if not expert.is_floating_point() and not expert.is_complex() and expert.dtype is not torch.bool:
            return _cross_entropy(self._prediction(self._call("actor_network", td), expert), expert)
        out_keys = getattr(self.actor_network, "out_keys", [])
        if any(k in out_keys for k in _DIST_PARAMS):
            return -self._actor_dist(td).log_prob(expert)
        td = self._call("actor_network", td)
        return F.mse_loss(self._prediction(td, expert), expert, reduction="none")

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """The behaviour-cloning loss of the batch (``{"loss_bc": ...}``)."""
        td = tensordict.copy()
        expert = self._get(td, self._tensor_keys.action)
        loss = self._elementwise(td, expert) if self.loss_function is not None else self._default(td, expert)
        mask = self._mask(td)
        if mask is not None:
            mask = _broadcast_mask(mask, loss, "the loss mask")
        pad_key = self._tensor_keys.pad_mask
        pad = td.get(pad_key, None) if pad_key is not None else None
        if pad is not None:
            valid = _broadcast_mask(~pad, loss, f"pad_mask {pad_key!r}")
            mask = valid if mask is None else valid & mask
            if self.reduction == "none":
                # TorchRL's contract for a padding mask: padded positions are dropped from the output.
                return self._finalize(tensordict, {"loss_bc": loss[mask]})
        return self._finalize(tensordict, {"loss_bc": self._reduce(loss, mask)})


def _broadcast_mask(mask: Tensor, loss: Tensor, what: str) -> Tensor:
    """``mask`` (trailing singleton dimensions dropped) broadcast to the elementwise ``loss``."""
    while mask.ndim > loss.ndim and mask.shape[-1] == 1:
        mask = mask.squeeze(-1)
    if mask.ndim > loss.ndim:
        raise RuntimeError(
            f"BCLoss: {what} of shape {tuple(mask.shape)} has more dimensions than the loss {tuple(loss.shape)}: "
            "per-element masking needs an elementwise loss (e.g. loss_function='l1')"
        )
    return mask.reshape(mask.shape + (1,) * (loss.ndim - mask.ndim)).expand_as(loss)
