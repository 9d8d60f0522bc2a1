"""TD3+BC loss: TD3 with a behaviour-cloning term for offline RL.

Fujimoto & Gu, "A Minimalist Approach to Offline Reinforcement Learning", https://arxiv.org/abs/2106.06860.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import Tensor

from tdrl.data import TensorSpec
from tdrl.objectives._ensemble_heads import policy_and_data_q
from tdrl.objectives.td3 import TD3Loss
from tdrl.objectives.utils import distance_loss

__all__ = ["TD3BCLoss"]


class TD3BCLoss(TD3Loss):
    """TD3+BC: ``loss_actor = -lmbd * Q_1(s, pi(s)) + mse(pi(s), a)`` with ``lmbd = alpha / mean|Q_1|``.

    Args:
        actor_network: deterministic policy writing ``"action"``.
        qvalue_network: Q(s, a) network, copied ``num_qvalue_nets`` times.

    Keyword Args:
        alpha: weight of the Q term (default 2.5).
        **kwargs: see :class:`~tdrl.objectives.TD3Loss` (no ``gamma``).

    Examples:
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> class Q(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.lin = torch.nn.Linear(5, 1)
        ...     def forward(self, obs, act):
        ...         return self.lin(torch.cat([obs, act], -1))
        >>> loss = TD3BCLoss(Mod(torch.nn.Linear(3, 2), ["observation"], ["action"]),
        ...                  Mod(Q(), ["observation", "action"], ["state_action_value"]), bounds=(-1.0, 1.0))
        >>> td = TensorDict({"observation": torch.randn(4, 3), "action": torch.randn(4, 2).clamp(-1, 1),
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(k for k in loss(td).keys() if k.startswith("loss"))
        ['loss_actor', 'loss_qvalue']
    """

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        qvalue_network: TensorDictModuleBase,
        *,
        action_spec: TensorSpec | None = None,
        bounds: tuple[float, float] | None = None,
        num_qvalue_nets: int = 2,
        policy_noise: float = 0.2,
        noise_clip: float = 0.5,
        alpha: float = 2.5,
        loss_function: str = "smooth_l1",
        delay_actor: bool = True,
        delay_qvalue: bool = True,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
        use_prioritized_weights: str | bool = "auto",
    ) -> None:
        super().__init__(
            actor_network, qvalue_network, action_spec=action_spec, bounds=bounds, num_qvalue_nets=num_qvalue_nets,
            policy_noise=policy_noise, noise_clip=noise_clip, loss_function=loss_function, delay_actor=delay_actor,
            delay_qvalue=delay_qvalue, priority_key=priority_key, separate_losses=separate_losses,
            reduction=reduction, deactivate_vmap=deactivate_vmap, use_prioritized_weights=use_prioritized_weights,
        )
        self.alpha = alpha

    def _out_keys(self) -> list[str]:
        return [
            "loss_actor", "loss_qvalue", "bc_loss", "lmbd", "pred_value", "state_action_value_actor",
            "next_state_value", "target_value",
        ]

    def _actor_terms(self, tensordict, actor_td, q_actor, mask, weights) -> tuple[Tensor, Tensor, Tensor]:
        """``(loss_actor, bc_loss, lmbd)`` from the policy's actions and their twin Q values."""
        q1 = q_actor[0]
        act = self._get(tensordict, self._tensor_keys.action)
        bc_loss = torch.nn.functional.mse_loss(self._get(actor_td, self._tensor_keys.action), act)
        lmbd = self.alpha / q1.abs().mean().detach()
        return self._reduce(-lmbd * q1 + bc_loss, mask, weights), bc_loss, lmbd

    def actor_loss(self, tensordict: TensorDictBase) -> tuple[Tensor, dict[str, Tensor]]:
        """The actor term alone: ``(loss_actor, {"bc_loss", "lmbd", "state_action_value_actor"})``."""
        actor_td = self._run_actor("actor_network", tensordict.select(*self.actor_network.in_keys, strict=False))
        q_actor = self._q(actor_td, "detached")
        loss, bc_loss, lmbd = self._actor_terms(
            tensordict, actor_td, q_actor, self._mask(tensordict), self._priority_weights(tensordict)
        )
        return loss, {"bc_loss": bc_loss.detach(), "lmbd": lmbd, "state_action_value_actor": q_actor.detach()}

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms and writes the TD error (``td_error``) into ``tensordict``."""
        keys = self._tensor_keys
        mask, weights = self._mask(tensordict), self._priority_weights(tensordict)
        actor_td = self._run_actor("actor_network", tensordict.select(*self.actor_network.in_keys, strict=False))
        target, next_q = self._target(tensordict, self._noise(tensordict))
        q_actor, pred = policy_and_data_q(self, tensordict, self._get(actor_td, keys.action))
        loss_actor, bc_loss, lmbd = self._actor_terms(tensordict, actor_td, q_actor, mask, weights)
        q1 = q_actor[0]
        loss_q = distance_loss(pred, target.expand_as(pred), self.loss_function).sum(0)
        tensordict.set(keys.priority, (pred - target).pow(2).detach().max(0).values)
        out = {
            "loss_actor": loss_actor,
            "loss_qvalue": self._reduce(loss_q, mask, weights),
            "bc_loss": bc_loss.detach(),
            "lmbd": lmbd,
            "pred_value": pred.detach(),
            "state_action_value_actor": q1.detach(),
            "next_state_value": next_q,
            "target_value": target,
        }
        return self._finalize(tensordict, out)
