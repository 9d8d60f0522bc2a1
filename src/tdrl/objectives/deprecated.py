"""Deprecated losses kept for API compatibility: :class:`REDQLoss_deprecated`."""

from __future__ import annotations

import dataclasses
from typing import cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase, set_interaction_type
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.data import TensorSpec
from tdrl.objectives._actor_critic import default_log_prob_key
from tdrl.objectives._ensemble_heads import policy_and_data_q
from tdrl.objectives.common import ParamSet
from tdrl.objectives.ddpg import as_next
from tdrl.objectives.redq import REDQLoss
from tdrl.objectives.utils import distance_loss

__all__ = ["REDQLoss_deprecated"]


class REDQLoss_deprecated(REDQLoss):  # noqa: N801 - TorchRL's public name
    """The original REDQ implementation: the policy samples through its own forward (``return_log_prob``),
    the actor term uses every critic and the target uses a random subset of the target critics.

    Same constructor as :class:`~tdrl.objectives.REDQLoss`; outputs ``loss_actor``, ``loss_qvalue``,
    ``loss_alpha``, ``alpha`` and ``entropy``.

    Examples:
        >>> from tdrl.data import Unbounded
        >>> from tdrl.modules import TanhNormal
        >>> from tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule as ProbMod,
        ...     ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod)
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 4), ["observation"], ["param"]),
        ...     Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ...     ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal,
        ...             return_log_prob=True))
        >>> class Q(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.lin = torch.nn.Linear(5, 1)
        ...     def forward(self, obs, act):
        ...         return self.lin(torch.cat([obs, act], -1))
        >>> loss = REDQLoss_deprecated(actor, Mod(Q(), ["observation", "action"], ["state_action_value"]),
        ...                            action_spec=Unbounded((2,)), num_qvalue_nets=4)
        >>> td = TensorDict({"observation": torch.randn(4, 3), "action": torch.rand(4, 2) - 0.5,
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(loss(td).keys())
        ['alpha', 'entropy', 'loss_actor', 'loss_alpha', 'loss_qvalue']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`REDQLoss_deprecated`."""

        action: NestedKey = "action"
        state_action_value: NestedKey = "state_action_value"
        value: NestedKey = "state_value"
        log_prob: NestedKey | None = None
        priority: NestedKey = "td_error"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"

        def __post_init__(self) -> None:
            if self.log_prob is None:
                self.log_prob = default_log_prob_key()

    # Its own key set (TorchRL's), not a superset of the parent's: the methods it inherits read only
    # the keys both share.
    _tensor_keys: REDQLoss_deprecated._AcceptedKeys  # type: ignore[assignment]

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        qvalue_network: TensorDictModuleBase,
        *,
        num_qvalue_nets: int = 10,
        sub_sample_len: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        min_alpha: float = 0.1,
        max_alpha: float = 10.0,
        action_spec: TensorSpec | None = None,
        fixed_alpha: bool = False,
        target_entropy: str | float = "auto",
        delay_qvalue: bool = True,
        gSDE: bool = False,  # noqa: N803 - TorchRL's argument name
        gamma: float | None = None,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
    ) -> None:
        # No ``scalar_output_mode``: this loss reports ``alpha`` and ``entropy`` with every reduction.
        super().__init__(
            actor_network, qvalue_network, num_qvalue_nets=num_qvalue_nets, sub_sample_len=sub_sample_len,
            loss_function=loss_function, alpha_init=alpha_init, min_alpha=min_alpha, max_alpha=max_alpha,
            action_spec=action_spec, fixed_alpha=fixed_alpha, target_entropy=target_entropy,
            delay_qvalue=delay_qvalue, gSDE=gSDE, gamma=gamma, priority_key=priority_key,
            separate_losses=separate_losses, reduction=reduction, deactivate_vmap=deactivate_vmap,
            scalar_output_mode="exclude",
        )

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        return [
            k.action, ("next", k.reward), ("next", k.done), ("next", k.terminated),
            *self.actor_network.in_keys, *[as_next(x) for x in self.actor_network.in_keys],
            *self.qvalue_network.in_keys,
        ]

    def _out_keys(self) -> list[str]:
        return ["loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"]

    def _act(self, td: TensorDictBase, which: ParamSet) -> TensorDictBase:
        with set_interaction_type(InteractionType.RANDOM):
            return self._call("actor_network", td, which)

    def _ensemble(self, td: TensorDictBase, which: ParamSet, params: TensorDictBase | None = None) -> Tensor:
        td_q = td.select(*self.qvalue_network.in_keys, strict=False)
        key = self._tensor_keys.state_action_value
        return self._vmap_call("qvalue_network", td_q, key, which, params=params).squeeze(-1)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms and writes ``td_error`` into ``tensordict``."""
        keys = self._tensor_keys
        lp_key = cast(NestedKey, keys.log_prob)  # set by _AcceptedKeys.__post_init__
        obs_keys = self.actor_network.in_keys
        actor_td = self._act(tensordict.select(*obs_keys, strict=False), "params")
        log_prob = self._get(actor_td, lp_key)
        alpha = self.alpha
        idx = torch.randperm(self.num_qvalue_nets)[: self.sub_sample_len].sort().values
        with torch.no_grad():
            next_td = self._act(self._next(tensordict).select(*obs_keys, strict=False), "detached")
            next_log_prob = self._get(next_td, lp_key)
            next_q = self._ensemble(next_td, "target", self.target_qvalue_network_params[idx])
            next_value = (next_q - alpha * next_log_prob).min(0).values.unsqueeze(-1)
            target = self._bootstrap_target(tensordict, next_value).squeeze(-1)
        q_actor, pred = policy_and_data_q(self, tensordict, self._get(actor_td, keys.action))
        loss_actor = -(q_actor - alpha * log_prob.squeeze(-1))
        loss_q = distance_loss(pred, target.expand_as(pred), self.loss_function)
        tensordict.set(keys.priority, (pred - target).abs().detach().max(0).values)
        loss_alpha = -self.log_alpha.clamp(self.min_log_alpha, self.max_log_alpha).exp() * (
            log_prob.detach() + self.target_entropy
        )
        mask = self._mask(tensordict)
        out = {
            "loss_actor": self._reduce(loss_actor, mask),
            "loss_qvalue": self._reduce(loss_q, mask),
            "loss_alpha": self._reduce(loss_alpha, mask),
            "alpha": alpha,
            "entropy": -log_prob.detach().mean(),
        }
        return self._finalize(tensordict, out)
