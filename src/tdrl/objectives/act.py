"""The ACT objective: L1 action-chunk reconstruction plus a weighted KL between the CVAE posterior and N(0, I).

Zhao et al., "Learning Fine-Grained Bimanual Manipulation with Low-Cost Hardware" (RSS 2023,
https://arxiv.org/abs/2304.13705), section IV.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from tensordict.utils import NestedKey

from tdrl.objectives.common import LossModule
from tdrl.objectives.utils import check_reduction, reduce

__all__ = ["ACTLoss"]


class ACTLoss(LossModule["ACTLoss._AcceptedKeys"]):
    """``loss_act = L1(pred, chunk) + kl_weight * KL(q(z | obs, chunk) || N(0, I))``.

    The actor is called on a tensordict holding ``"observation"`` and ``"action_chunk"`` (the names an
    :class:`~tdrl.modules.models.ACTModel` wrapped in a ``TensorDictModule`` reads) and must write the
    ``action_pred``, ``mu`` and ``log_var`` keys. The reconstruction is averaged over the chunk and action
    dimensions, the KL summed over the latent, then both are reduced over the batch. ``loss_reconstruction``
    and ``loss_kl`` are reported detached.

    Args:
        actor_network: the ACT policy (``["observation", "action_chunk"] -> [action_pred, mu, log_var]``).

    Keyword Args:
        kl_weight: ``beta``, the KL weight (10 in the paper).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (per-sample terms shaped like the batch).

    Keys (``set_keys``): ``observation``, ``action_chunk`` (expert chunk ``[..., T, action_dim]``, default
    ``("vla_action", "chunk")``), ``action_pred``, ``mu``, ``log_var``.

    Examples:
        >>> import torch
        >>> from tdrl.modules.models import ACTModel
        >>> model = ACTModel(3, 2, chunk_size=4, hidden_dim=8, nheads=2, num_encoder_layers=1, num_decoder_layers=1)
        >>> actor = TensorDictModule(model, ["observation", "action_chunk"], ["action_pred", "mu", "log_var"])
        >>> td = TensorDict({"observation": torch.randn(5, 3), ("vla_action", "chunk"): torch.randn(5, 4, 2)}, [5])
        >>> sorted(ACTLoss(actor)(td).keys())
        ['loss_act', 'loss_kl', 'loss_reconstruction']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`ACTLoss`."""

        observation: NestedKey = "observation"
        action_chunk: NestedKey = ("vla_action", "chunk")
        action_pred: NestedKey = "action_pred"
        mu: NestedKey = "mu"
        log_var: NestedKey = "log_var"

    def __init__(
        self,
        actor_network: TensorDictModule,
        *,
        kl_weight: float = 10.0,
        reduction: Literal["mean", "sum", "none"] = "mean",
    ) -> None:
        super().__init__()
        self.convert_to_functional(actor_network, "actor_network")
        self.kl_weight = kl_weight
        self.reduction = check_reduction(reduction)

    def _collect_in_keys(self) -> list[NestedKey]:
        return [self._tensor_keys.observation, self._tensor_keys.action_chunk]

    def _out_keys(self) -> list[str]:
        return ["loss_act", "loss_reconstruction", "loss_kl"]

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """The three ACT terms of the batch."""
        keys = self._tensor_keys
        chunk = self._get(tensordict, keys.action_chunk)
        inputs = TensorDict(
            {"observation": self._get(tensordict, keys.observation), "action_chunk": chunk},
            batch_size=tensordict.batch_size,
            device=tensordict.device,
        )
        out = self._call("actor_network", inputs)
        pred, mu, log_var = self._get(out, keys.action_pred), self._get(out, keys.mu), self._get(out, keys.log_var)
        if pred.shape != chunk.shape:
            raise ValueError(
                f"ACTLoss: the actor's {keys.action_pred!r} has shape {tuple(pred.shape)}, the expert chunk "
                f"{keys.action_chunk!r} {tuple(chunk.shape)}; they must match"
            )
        recon = reduce(F.l1_loss(pred, chunk, reduction="none").mean(dim=(-2, -1)), self.reduction)
        # Closed-form KL(N(mu, exp(log_var)) || N(0, I)), summed over the latent (Kingma & Welling 2014, app. B).
        kl = reduce((-0.5 * (1.0 + log_var - mu.pow(2) - log_var.exp())).sum(-1), self.reduction)
        losses = {"loss_act": recon + self.kl_weight * kl, "loss_reconstruction": recon.detach(), "loss_kl": kl.detach()}
        return self._finalize(tensordict, losses)
