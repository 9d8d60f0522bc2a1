"""Implicit Q-Learning loss (continuous actions).

Kostrikov et al., "Offline Reinforcement Learning with Implicit Q-Learning", https://arxiv.org/abs/2110.06169.
"""

from __future__ import annotations

import dataclasses

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.data import TensorSpec
from tdrl.modules.tensordict_module.action_space import find_action_space
from tdrl.objectives._actor_critic import _shared_prefix
from tdrl.objectives._discrete import chosen_action_value
from tdrl.objectives._repeat import is_pure
from tdrl.objectives.common import LossModule, ParamSet
from tdrl.objectives.ddpg import as_next
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction, distance_loss

__all__ = ["DiscreteIQLLoss", "IQLLoss", "expectile_loss"]


def expectile_loss(diff: Tensor, expectile: float = 0.8) -> Tensor:
    """Asymmetric squared loss ``|expectile - 1(diff < 0)| * diff**2``.

    Examples:
        >>> expectile_loss(torch.tensor([1.0, -1.0]), 0.8)
        tensor([0.8000, 0.2000])
    """
    weight = torch.where(diff > 0, expectile, 1 - expectile)
    return weight * diff.pow(2)


class IQLLoss(LossModule["IQLLoss._AcceptedKeys"]):
    """IQL: expectile value regression, TD Q regression on ``V(s')``, advantage-weighted policy regression.

    Args:
        actor_network: stochastic policy (``get_dist``).
        qvalue_network: Q(s, a) network, copied ``num_qvalue_nets`` times (with target copies).
        value_network: V(s) network.

    Keyword Args:
        num_qvalue_nets: ensemble size (default 2).
        loss_function: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        temperature: inverse temperature of the advantage weights (default 1.0).
        expectile: expectile of the value regression (default 0.5).
        gamma: removed; must be ``None``.
        priority_key: deprecated; must be ``None``.
        separate_losses: shared parameters are trained by the actor loss only.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        scalar_output_mode: with ``reduction="none"``, ``"exclude"`` leaves the scalar diagnostics
            (``entropy``) out of the output and ``"non_tensor"`` stores them as non-tensor entries;
            ``None`` (default) excludes them with a warning.
        deactivate_vmap: accepted for API compatibility.

    Examples:
        >>> from tdrl.modules import TanhNormal
        >>> from tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule as ProbMod,
        ...     ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod)
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 4), ["observation"], ["param"]),
        ...     Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ...     ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal))
        >>> class Q(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.lin = torch.nn.Linear(5, 1)
        ...     def forward(self, obs, act):
        ...         return self.lin(torch.cat([obs, act], -1))
        >>> loss = IQLLoss(actor, Mod(Q(), ["observation", "action"], ["state_action_value"]),
        ...                Mod(torch.nn.Linear(3, 1), ["observation"], ["state_value"]))
        >>> td = TensorDict({"observation": torch.randn(4, 3), "action": torch.rand(4, 2) - 0.5,
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(loss(td).keys())
        ['entropy', 'loss_actor', 'loss_qvalue', 'loss_value']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`IQLLoss`."""

        value: NestedKey = "state_value"
        action: NestedKey = "action"
        log_prob: NestedKey = "_log_prob"
        priority: NestedKey = "td_error"
        state_action_value: NestedKey = "state_action_value"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"

    default_value_estimator = ValueEstimators.TD0
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
    _value_estimator_keys = ("value", "reward", "done", "terminated")

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        qvalue_network: TensorDictModuleBase,
        value_network: TensorDictModuleBase | None,
        *,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        temperature: float = 1.0,
        expectile: float = 0.5,
        gamma: float | None = None,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
        scalar_output_mode: str | None = None,
    ) -> None:
        super().__init__()
        if gamma is not None:
            raise TypeError("gamma is no longer a loss argument; use loss.make_value_estimator(gamma=...)")
        if priority_key is not None:
            raise TypeError("priority_key is deprecated; use loss.set_keys(priority=...)")
        if value_network is None:
            raise TypeError("IQLLoss needs a value_network")
        self.temperature, self.expectile = temperature, expectile
        self.loss_function = check_loss_function(loss_function)
        self.reduction = check_reduction(reduction)
        self._set_scalar_output_mode(scalar_output_mode, "entropy")
        self.deactivate_vmap = deactivate_vmap
        self.num_qvalue_nets = num_qvalue_nets
        self.delay_qvalue = True
        self.convert_to_functional(actor_network, "actor_network")
        shared = list(actor_network.parameters()) if separate_losses else None
        self.convert_to_functional(value_network, "value_network", compare_against=shared)
        q_shared = (shared or []) + list(value_network.parameters()) if separate_losses else None
        self.convert_to_functional(
            qvalue_network, "qvalue_network", num_qvalue_nets, create_target_params=True, compare_against=q_shared
        )
        self.__dict__["_v_split"] = self._value_split(actor_network, value_network)

    def _value_split(self, actor: TensorDictModuleBase, value: TensorDictModuleBase):
        """``(prefix, actor_tail, value_tail)`` when the value network starts with the actor's own first
        modules (a shared trunk, both networks on their own parameters): the value head then reads the
        trunk output the actor computed. ``None`` otherwise."""
        split = _shared_prefix(actor, value)
        if split is None or not (self._stateful["actor_network"] and self._stateful["value_network"]):
            return None
        prefix, actor_tail, value_tail = split
        if not is_pure(prefix) or set(value_tail.in_keys) & set(actor_tail.out_keys):
            return None
        return split

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict:
        return {"value_network": None}

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        return [
            k.action, ("next", k.reward), ("next", k.done), ("next", k.terminated),
            *self.actor_network.in_keys, *[as_next(x) for x in self.actor_network.in_keys],
            *self.qvalue_network.in_keys, *self.value_network.in_keys,
        ]

    def _out_keys(self) -> list[str]:
        return ["loss_actor", "loss_qvalue", "loss_value", "entropy"]

    def _q(self, td: TensorDictBase, which: ParamSet) -> Tensor:
        td_q = td.select(*self.qvalue_network.in_keys, strict=False)
        return self._vmap_call("qvalue_network", td_q, self._tensor_keys.state_action_value, which).squeeze(-1)

    def _v(self, td: TensorDictBase, which: ParamSet = "params") -> Tensor:
        td_v = td.select(*self.value_network.in_keys, strict=False)
        return self._get(self._call("value_network", td_v, which), self._tensor_keys.value).squeeze(-1)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms; writes ``td_error`` and the action log-prob into ``tensordict``."""
        keys = self._tensor_keys
        mask = self._mask(tensordict)
        actor_td = tensordict.copy()
        with self._swap("actor_network", "params"):
            dist = self.actor_network.get_dist(actor_td)
        log_prob = dist.log_prob(self._get(tensordict, keys.action))
        min_q = self._q(tensordict, "target").min(0).values
        # One value forward serves the advantage weights (detached) and the expectile loss; with a trunk
        # shared with the actor, only the value head runs (on the trunk output the actor wrote).
        if self._v_split is not None:
            value = self._get(self._v_split[2](actor_td), keys.value).squeeze(-1)
        else:
            value = self._v(tensordict)
        value_detached = value.detach()
        exp_a = torch.exp((min_q - value_detached) * self.temperature).clamp_max(100)
        tensordict.set(keys.log_prob, log_prob.detach())
        loss_actor = self._reduce(-(exp_a * log_prob), mask)
        with torch.no_grad():
            next_value = self._v(self._next(tensordict), "detached").unsqueeze(-1)
            target = self._bootstrap_target(tensordict, next_value).squeeze(-1)
        pred = self._q(tensordict, "params")
        loss_q = self._reduce(distance_loss(pred, target.expand_as(pred), self.loss_function).sum(0), mask)
        loss_value = self._reduce(expectile_loss(min_q - value, self.expectile), mask)
        tensordict.set(keys.priority, (pred - target).pow(2).detach().max(0).values)
        out = {"loss_actor": loss_actor, "loss_qvalue": loss_q, "loss_value": loss_value}
        if self.reduction != "none":
            out["entropy"] = -log_prob.detach().mean()
        elif self.scalar_output_mode == "non_tensor":
            return self._finalize(tensordict, out, {"entropy": -log_prob.detach().mean()})
        return self._finalize(tensordict, out)


class DiscreteIQLLoss(IQLLoss):
    """IQL for discrete actions: the Q network writes one value per action and the taken one is used.

    Args:
        actor_network: categorical policy.
        qvalue_network: network writing per-action values ``"state_action_value"``.
        value_network: V(s) network.

    Keyword Args:
        action_space: ``"one-hot"`` (default) or ``"categorical"`` (or a spec).
        **kwargs: see :class:`IQLLoss`.

    Examples:
        >>> from tdrl.modules import OneHotCategorical
        >>> from tensordict.nn import ProbabilisticTensorDictModule as ProbMod
        >>> from tensordict.nn import ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 2), ["observation"], ["logits"]),
        ...     ProbMod(in_keys=["logits"], out_keys=["action"], distribution_class=OneHotCategorical))
        >>> loss = DiscreteIQLLoss(actor, Mod(torch.nn.Linear(3, 2), ["observation"], ["state_action_value"]),
        ...     Mod(torch.nn.Linear(3, 1), ["observation"], ["state_value"]), action_space="one-hot")
        >>> td = TensorDict({"observation": torch.randn(4, 3),
        ...     "action": torch.nn.functional.one_hot(torch.randint(2, (4,)), 2),
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(loss(td).keys())
        ['entropy', 'loss_actor', 'loss_qvalue', 'loss_value']
    """

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        qvalue_network: TensorDictModuleBase,
        value_network: TensorDictModuleBase | None,
        *,
        action_space: str | TensorSpec | None = None,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        temperature: float = 1.0,
        expectile: float = 0.5,
        gamma: float | None = None,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        scalar_output_mode: str | None = None,
    ) -> None:
        if expectile >= 1.0:
            raise ValueError(f"Expectile should be lower than 1.0 but is {expectile}")
        super().__init__(
            actor_network, qvalue_network, value_network, num_qvalue_nets=num_qvalue_nets,
            loss_function=loss_function, temperature=temperature, expectile=expectile, gamma=gamma,
            priority_key=priority_key, separate_losses=separate_losses, reduction=reduction,
            scalar_output_mode=scalar_output_mode,
        )
        self.action_space = find_action_space(action_space or "one-hot").replace("_", "-")

    def _q(self, td: TensorDictBase, which: ParamSet) -> Tensor:
        td_q = td.select(*self.qvalue_network.in_keys, strict=False)
        values = self._vmap_call("qvalue_network", td_q, self._tensor_keys.state_action_value, which)
        action = self._get(td, self._tensor_keys.action)
        return chosen_action_value(values, action.expand(values.shape[0], *action.shape), self.action_space)
