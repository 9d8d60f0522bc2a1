"""Discrete-action Soft Actor-Critic loss.

Christodoulou, "Soft Actor-Critic for Discrete Action Settings", https://arxiv.org/abs/1910.07207.
Expectations over actions are exact (the policy's probabilities weight every action value).
"""

from __future__ import annotations

import dataclasses
import math

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.data import TensorSpec
from tdrl.modules.tensordict_module.action_space import find_action_space
from tdrl.objectives._discrete import chosen_action_value
from tdrl.objectives._temperature import TemperatureMixin
from tdrl.objectives.common import LossModule, ParamSet
from tdrl.objectives.ddpg import as_next
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction, distance_loss

__all__ = ["DiscreteSACLoss"]


class DiscreteSACLoss(TemperatureMixin, LossModule["DiscreteSACLoss._AcceptedKeys"]):
    """Discrete SAC: ``loss_actor = E_pi[alpha log pi - min_i Q_i]``, twin-Q TD regression, temperature loss.

    Args:
        actor_network: categorical policy (``get_dist`` returning a distribution with ``probs``/``logits``).
        qvalue_network: network writing per-action values ``"action_value"``; copied ``num_qvalue_nets`` times.

    Keyword Args:
        action_space: ``"one-hot"`` (default) / ``"categorical"`` or a spec.
        num_actions: number of actions (needed for ``target_entropy="auto"``).
        num_qvalue_nets: ensemble size (default 2).
        loss_function: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        alpha_init: initial temperature (default 1.0).
        min_alpha: lower bound of alpha.
        max_alpha: upper bound of alpha.
        fixed_alpha: keep alpha constant.
        target_entropy_weight: fraction of the maximal entropy used as target (default 0.98).
        target_entropy: ``"auto"`` or a float.
        delay_qvalue: target Q parameters (default ``True``).
        priority_key: deprecated; must be ``None``.
        separate_losses: parameters shared with the actor are trained by the actor loss only.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        scalar_output_mode: with ``reduction="none"``, ``"exclude"`` leaves the scalar diagnostics
            (``alpha``, ``entropy``) out of the output and ``"non_tensor"`` stores them as non-tensor entries;
            ``None`` (default) excludes them with a warning.
        skip_done_states: accepted for API compatibility (done states are masked by the bootstrap).
        deactivate_vmap: accepted for API compatibility.
        use_prioritized_weights: ``"auto"``: weight by ``"priority_weight"`` when present.

    Examples:
        >>> from tdrl.modules import OneHotCategorical
        >>> from tensordict.nn import ProbabilisticTensorDictModule as ProbMod
        >>> from tensordict.nn import ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 2), ["observation"], ["logits"]),
        ...     ProbMod(in_keys=["logits"], out_keys=["action"], distribution_class=OneHotCategorical))
        >>> qnet = Mod(torch.nn.Linear(3, 2), ["observation"], ["action_value"])
        >>> loss = DiscreteSACLoss(actor, qnet, action_space="one-hot", num_actions=2)
        >>> td = TensorDict({"observation": torch.randn(4, 3),
        ...     "action": torch.nn.functional.one_hot(torch.randint(2, (4,)), 2),
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(loss(td).keys())
        ['alpha', 'entropy', 'loss_actor', 'loss_alpha', 'loss_qvalue']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DiscreteSACLoss`."""

        action: NestedKey = "action"
        value: NestedKey = "state_value"
        action_value: NestedKey = "action_value"
        priority: NestedKey = "td_error"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        log_prob: NestedKey = "log_prob"
        priority_weight: NestedKey = "priority_weight"

    default_value_estimator = ValueEstimators.TD0
    delay_actor: bool = False
    _state_dict_aliases = {"target_entropy": "_target_entropy"}
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
    _value_estimator_keys = ("value", "reward", "done", "terminated")

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        qvalue_network: TensorDictModuleBase,
        *,
        action_space: str | TensorSpec | None = None,
        num_actions: int | None = None,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        fixed_alpha: bool = False,
        target_entropy_weight: float = 0.98,
        target_entropy: str | float = "auto",
        delay_qvalue: bool = True,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        skip_done_states: bool = False,
        deactivate_vmap: bool = False,
        use_prioritized_weights: str | bool = "auto",
        scalar_output_mode: str | None = None,
    ) -> None:
        super().__init__()
        if priority_key is not None:
            raise TypeError("priority_key is deprecated; use loss.set_keys(priority=...)")
        self.use_prioritized_weights = use_prioritized_weights
        self.loss_function = check_loss_function(loss_function)
        self.reduction = check_reduction(reduction)
        self._set_scalar_output_mode(scalar_output_mode, "alpha, entropy")
        self.skip_done_states, self.deactivate_vmap = skip_done_states, deactivate_vmap
        self.delay_qvalue = delay_qvalue
        self.num_qvalue_nets = num_qvalue_nets
        self.convert_to_functional(actor_network, "actor_network")
        shared = list(actor_network.parameters()) if separate_losses else None
        self.convert_to_functional(
            qvalue_network, "qvalue_network", num_qvalue_nets, create_target_params=delay_qvalue, compare_against=shared
        )
        self.action_space = find_action_space(action_space or "one-hot").replace("_", "-")
        if target_entropy == "auto":
            if num_actions is None:
                raise ValueError("num_actions needs to be provided if target_entropy == 'auto'")
            target_entropy = -float(math.log(1.0 / num_actions) * target_entropy_weight)
        self._init_temperature(
            alpha_init=alpha_init, min_alpha=min_alpha, max_alpha=max_alpha, fixed_alpha=fixed_alpha,
            target_entropy=float(target_entropy), action_spec=None, actor_network=actor_network,
            action_key=self._tensor_keys.action, device=self._default_device(),
        )

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict:
        return {"value_network": None}

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        return [
            k.action, ("next", k.reward), ("next", k.done), ("next", k.terminated),
            *self.actor_network.in_keys, *[as_next(x) for x in self.actor_network.in_keys],
            *self.qvalue_network.in_keys,
        ]

    def _out_keys(self) -> list[str]:
        return ["loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"]

    def _q(self, td: TensorDictBase, which: ParamSet) -> Tensor:
        td_q = td.select(*self.qvalue_network.in_keys, strict=False)
        return self._vmap_call("qvalue_network", td_q, self._tensor_keys.action_value, which)

    def _target(self, tensordict: TensorDictBase, alpha: Tensor) -> Tensor:
        with torch.no_grad():
            next_td = self._next(tensordict).copy()
            with self._swap("actor_network", "params"):
                prob = self.actor_network.get_dist(next_td.copy()).probs
            log_prob = torch.log(torch.where(prob == 0, 1e-8, prob))
            next_q = self._q(next_td, "target").min(0).values - alpha * log_prob
            next_value = (prob * next_q).sum(-1, keepdim=True)
            return self._bootstrap_target(tensordict, next_value).squeeze(-1)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms and writes the TD error (``td_error``) into ``tensordict``."""
        keys = self._tensor_keys
        mask = self._mask(tensordict)
        weights = self._priority_weights(tensordict)
        alpha = self._alpha
        action = self._get(tensordict, keys.action)
        target = self._target(tensordict, alpha)
        q = self._q(tensordict, "params")
        chosen = chosen_action_value(q, action.expand(q.shape[0], *action.shape), self.action_space)
        loss_q = distance_loss(chosen, target.expand_as(chosen), self.loss_function).sum(0)
        tensordict.set(keys.priority, (chosen - target).abs().detach().max(0).values)
        with self._swap("actor_network", "params"):
            dist = self.actor_network.get_dist(tensordict.copy())
        prob, log_prob = dist.probs, dist.logits
        min_q = self._q(tensordict, "detached").min(0).values
        loss_actor = (prob * (alpha * log_prob - min_q)).sum(-1)
        entropy_term = (log_prob * prob).sum(-1).detach()
        out = {
            "loss_actor": self._reduce(loss_actor, mask, weights),
            "loss_qvalue": self._reduce(loss_q, mask, weights),
            "loss_alpha": self._reduce(-self.log_alpha * (entropy_term + self.target_entropy), mask, weights),
        }
        if self.reduction != "none":
            out["alpha"] = alpha
            out["entropy"] = -entropy_term.mean()
        elif self.scalar_output_mode == "non_tensor":
            return self._finalize(tensordict, out, {"alpha": alpha, "entropy": -entropy_term.mean()})
        return self._finalize(tensordict, out)
