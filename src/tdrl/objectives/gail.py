"""Generative Adversarial Imitation Learning: the discriminator's loss.

Ho & Ermon, "Generative Adversarial Imitation Learning" (2016), https://arxiv.org/abs/1606.03476; the
optional gradient penalty is Gulrajani et al.'s (WGAN-GP, 2017), https://arxiv.org/abs/1704.00028.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.objectives.common import LossModule

__all__ = ["GAILLoss"]


class GAILLoss(LossModule["GAILLoss._AcceptedKeys"]):
    """GAIL discriminator loss: binary cross-entropy with expert pairs labelled 1 and collected pairs 0.

    The discriminator reads the expert observation and action keys and writes the probability that a pair
    is expert (a sigmoid output, in ``[0, 1]``) at ``discriminator_pred``; it is run once on the expert and
    collected pairs concatenated along the first batch dimension. ``loss`` per sample is
    ``BCE(D(expert), 1) + BCE(D(collected), 0)``. With ``use_grad_penalty`` it adds
    ``gp_lambda * mean((||grad D(x_mix)|| - 1)^2)`` at random interpolations ``x_mix`` of the two pairs
    (the detached value is reported as ``gp_loss``); that term calls ``torch.autograd.grad`` and so runs
    eagerly only.

    Args:
        discriminator_network: the discriminator.

    Keyword Args:
        use_grad_penalty: add the gradient penalty (default ``False``).
        gp_lambda: its weight (default 10).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Keys (``set_keys``): ``expert_action``, ``expert_observation`` (also the keys the discriminator reads),
    ``collector_action``, ``collector_observation`` and ``discriminator_pred`` (default ``"d_logits"``).

    Examples:
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> class Disc(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.lin = torch.nn.Linear(5, 1)
        ...     def forward(self, obs, act):
        ...         return torch.sigmoid(self.lin(torch.cat([obs, act], -1)))
        >>> loss = GAILLoss(Mod(Disc(), ["observation", "action"], ["d_logits"]), use_grad_penalty=True)
        >>> td = TensorDict({"observation": torch.randn(6, 3), "action": torch.randn(6, 2),
        ...                  "collector_observation": torch.randn(6, 3), "collector_action": torch.randn(6, 2)}, [6])
        >>> sorted(loss(td).keys())
        ['gp_loss', 'loss']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`GAILLoss`."""

        expert_action: NestedKey = "action"
        expert_observation: NestedKey = "observation"
        collector_action: NestedKey = "collector_action"
        collector_observation: NestedKey = "collector_observation"
        discriminator_pred: NestedKey = "d_logits"

    def __init__(
        self,
        discriminator_network: TensorDictModuleBase,
        *,
        use_grad_penalty: bool = False,
        gp_lambda: float = 10,
        reduction: Literal["mean", "sum", "none"] | None = None,
    ) -> None:
        super().__init__()
        self.convert_to_functional(discriminator_network, "discriminator_network")
        self.use_grad_penalty = use_grad_penalty
        self.gp_lambda = gp_lambda
        self._set_reduction(reduction)

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        keys = {*self.discriminator_network.in_keys, k.expert_observation, k.expert_action,
                k.collector_observation, k.collector_action}
        return sorted(keys, key=str)

    def _out_keys(self) -> list[str]:
        return ["loss", "gp_loss"] if self.use_grad_penalty else ["loss"]

    def _discriminate(self, obs: Tensor, action: Tensor, batch: list[int]) -> Tensor:
        k = self._tensor_keys
        inputs = TensorDict({k.expert_observation: obs, k.expert_action: action}, batch_size=batch)
        return self._get(self._call("discriminator_network", inputs), k.discriminator_pred)

    def _grad_penalty(self, expert: tuple[Tensor, Tensor], collected: tuple[Tensor, Tensor]) -> Tensor:
        if torch.compiler.is_compiling():
            raise RuntimeError("GAILLoss: the gradient penalty calls torch.autograd.grad and runs eagerly only")
        mixed = []
        for e, c in zip(expert, collected, strict=True):
            weight = torch.rand(e.shape, device=e.device, dtype=e.dtype)
            mixed.append((weight * c + (1 - weight) * e).detach().requires_grad_(True))
        pred = self._discriminate(mixed[0], mixed[1], [])
        grads = torch.autograd.grad(pred, mixed, grad_outputs=torch.ones_like(pred), create_graph=True)
        return self.gp_lambda * ((torch.linalg.norm(torch.cat(grads, -1), dim=-1) - 1) ** 2).mean()

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """The discriminator loss of the batch (``{"loss": ...}``, plus ``"gp_loss"`` with the penalty)."""
        k = self._tensor_keys
        if tensordict.ndim not in (1, 2):
            raise ValueError(f"GAILLoss: expects a [B] or [B, T] batch, got batch_size {tuple(tensordict.batch_size)}")
        expert = (self._get(tensordict, k.expert_observation), self._get(tensordict, k.expert_action))
        collected = (self._get(tensordict, k.collector_observation), self._get(tensordict, k.collector_action))
        n = tensordict.batch_size[0]
        pred = self._discriminate(
            torch.cat([expert[0], collected[0]], 0), torch.cat([expert[1], collected[1]], 0), [2 * n]
        )
        pred_expert, pred_collected = pred[:n], pred[n:]
        loss = F.binary_cross_entropy(pred_expert, torch.ones_like(pred_expert), reduction="none") + \
            F.binary_cross_entropy(pred_collected, torch.zeros_like(pred_collected), reduction="none")
        out: dict[str, Tensor] = {}
        if self.use_grad_penalty:
            gp = self._grad_penalty(expert, collected)
            loss = loss + gp
            out["gp_loss"] = gp.detach()
        out["loss"] = self._reduce(loss, self._mask(tensordict))
        return self._finalize(tensordict, out)
