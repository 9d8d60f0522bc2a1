"""TD3 loss: twin (ensemble) Q networks, target policy smoothing, clipped double-Q targets.

Fujimoto et al., "Addressing Function Approximation Error in Actor-Critic Methods",
https://arxiv.org/abs/1802.09477.
"""

from __future__ import annotations

import dataclasses

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.data import Bounded, Composite, TensorSpec
from tdrl.objectives._ensemble_heads import policy_and_data_q
from tdrl.objectives.common import LossModule, ParamSet
from tdrl.objectives.ddpg import as_next
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction, distance_loss

__all__ = ["TD3Loss", "action_bounds"]


def action_bounds(
    action_spec: TensorSpec | None, bounds: tuple[float, float] | None, action_key: NestedKey
) -> tuple[Tensor, Tensor]:
    """``(low, high)`` of the action, from a ``Bounded`` spec or explicit ``bounds`` (exactly one).

    Examples:
        >>> action_bounds(None, (-1.0, 1.0), "action")
        (tensor(-1.), tensor(1.))
    """
    if (action_spec is None) == (bounds is None):
        raise ValueError(
            f"One of 'bounds' and 'action_spec' must be provided, but not both or none. Got bounds={bounds} "
            f"and action_spec={action_spec}."
        )
    if action_spec is not None:
        if isinstance(action_spec, Composite):
            action_spec = action_spec[action_key]
        if not isinstance(action_spec, Bounded):
            raise ValueError(f"action_spec must be Bounded, got {type(action_spec).__name__}")
        low, high = action_spec.space.low, action_spec.space.high
    else:
        assert bounds is not None  # checked above: exactly one of the two is given
        low, high = bounds
    low = torch.as_tensor(low, dtype=torch.get_default_dtype())
    high = torch.as_tensor(high, dtype=low.dtype)
    if (low > high).any():
        raise ValueError("Got a low bound higher than a high bound.")
    return low, high


class TD3Loss(LossModule["TD3Loss._AcceptedKeys"]):
    """TD3: ``loss_actor = -Q_1(s, pi(s))``; ``loss_qvalue = sum_i distance(Q_i(s, a), y)`` with
    ``y = r + gamma * min_i Q'_i(s', clip(pi'(s') + clip(noise)))``.

    Args:
        actor_network: deterministic policy writing ``"action"``.
        qvalue_network: Q(s, a) network, copied ``num_qvalue_nets`` times.

    Keyword Args:
        action_spec: a ``Bounded`` action spec (or give ``bounds``).
        bounds: ``(low, high)`` of the action.
        num_qvalue_nets: ensemble size (default 2).
        policy_noise: std of the target-policy smoothing noise (default 0.2).
        noise_clip: clip of that noise (default 0.5).
        loss_function: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        delay_actor: target policy (default ``True``).
        delay_qvalue: target Q networks (default ``True``).
        gamma: removed; must be ``None``.
        priority_key: deprecated; must be ``None``.
        separate_losses: parameters shared with the actor are trained by the actor loss only.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        deactivate_vmap: accepted for API compatibility.
        use_prioritized_weights: ``"auto"``: weight by ``"priority_weight"`` when present.

    Examples:
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> class Q(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.lin = torch.nn.Linear(5, 1)
        ...     def forward(self, obs, act):
        ...         return self.lin(torch.cat([obs, act], -1))
        >>> loss = TD3Loss(Mod(torch.nn.Linear(3, 2), ["observation"], ["action"]),
        ...                Mod(Q(), ["observation", "action"], ["state_action_value"]), bounds=(-1.0, 1.0))
        >>> td = TensorDict({"observation": torch.randn(4, 3), "action": torch.randn(4, 2).clamp(-1, 1),
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(k for k in loss(td).keys() if k.startswith("loss"))
        ['loss_actor', 'loss_qvalue']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`TD3Loss`."""

        action: NestedKey = "action"
        state_action_value: NestedKey = "state_action_value"
        priority: NestedKey = "td_error"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        priority_weight: NestedKey = "priority_weight"

    default_value_estimator = ValueEstimators.TD0
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
    _value_estimator_keys = ("reward", "done", "terminated")

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
        loss_function: str = "smooth_l1",
        delay_actor: bool = True,
        delay_qvalue: bool = True,
        gamma: float | None = None,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
        use_prioritized_weights: str | bool = "auto",
    ) -> None:
        super().__init__()
        if gamma is not None:
            raise TypeError("gamma is no longer a loss argument; use loss.make_value_estimator(gamma=...)")
        if priority_key is not None:
            raise TypeError("priority_key is deprecated; use loss.set_keys(priority=...)")
        self.delay_actor, self.delay_qvalue = delay_actor, delay_qvalue
        self.deactivate_vmap = deactivate_vmap
        self.num_qvalue_nets = num_qvalue_nets
        self.policy_noise, self.noise_clip = policy_noise, noise_clip
        self.loss_function = check_loss_function(loss_function)
        self.reduction = check_reduction(reduction)
        self.use_prioritized_weights = use_prioritized_weights
        self.convert_to_functional(actor_network, "actor_network", create_target_params=delay_actor)
        shared = list(actor_network.parameters()) if separate_losses else None
        self.convert_to_functional(
            qvalue_network, "qvalue_network", num_qvalue_nets, create_target_params=delay_qvalue, compare_against=shared
        )
        self._register_split("qvalue_network")
        low, high = action_bounds(action_spec, bounds, self._tensor_keys.action)
        device = self._default_device()
        self.register_buffer("max_action", high.to(device))
        self.register_buffer("min_action", low.to(device))

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
        return ["loss_actor", "loss_qvalue", "pred_value", "state_action_value_actor", "next_state_value", "target_value"]

    def _q(self, td: TensorDictBase, which: ParamSet) -> Tensor:
        td_q = td.select(*self.qvalue_network.in_keys, strict=False)
        return self._vmap_call("qvalue_network", td_q, self._tensor_keys.state_action_value, which).squeeze(-1)

    def _target(self, tensordict: TensorDictBase, noise: Tensor) -> tuple[Tensor, Tensor]:
        keys = self._tensor_keys
        with torch.no_grad():
            next_td = self._run_actor("actor_network", self._next(tensordict).copy(), "target")
            # Target policy smoothing (Fujimoto et al. 2018, eq. 14): clipped noise, then the action bounds.
            next_action = (self._get(next_td, keys.action) + noise).clamp(self.min_action, self.max_action)
            next_td.set(keys.action, next_action)
            next_q = self._q(next_td, "target").min(0).values
            target = self._bootstrap_target(tensordict, next_q.unsqueeze(-1)).squeeze(-1)
        return target, next_q

    def _noise(self, tensordict: TensorDictBase) -> Tensor:
        act = self._get(tensordict, self._tensor_keys.action)
        return (torch.randn_like(act) * self.policy_noise).clamp(-self.noise_clip, self.noise_clip)

    def actor_loss(self, tensordict: TensorDictBase) -> tuple[Tensor, dict[str, Tensor]]:
        """The actor term alone: ``(loss_actor, {"state_action_value_actor": ...})``, ``-Q_1(s, pi(s))``
        with the critics detached (TorchRL's ``TD3Loss.actor_loss``; for delayed actor updates)."""
        actor_td = self._run_actor("actor_network", tensordict.select(*self.actor_network.in_keys, strict=False))
        q_actor = self._q(actor_td, "detached")
        loss = self._reduce(-q_actor[0], self._mask(tensordict), self._priority_weights(tensordict))
        return loss, {"state_action_value_actor": q_actor.detach()}

    def value_loss(self, tensordict: TensorDictBase) -> tuple[Tensor, dict[str, Tensor]]:
        """The critic term alone: ``(loss_qvalue, metadata)`` with ``td_error`` (squared, per member),
        ``next_state_value``, ``pred_value`` and ``target_value`` (TorchRL's ``TD3Loss.value_loss``)."""
        target, next_q = self._target(tensordict, self._noise(tensordict))
        pred = self._q(tensordict, "params")
        loss_q = distance_loss(pred, target.expand_as(pred), self.loss_function).sum(0)
        metadata = {
            "td_error": (pred - target).pow(2).detach(),
            "next_state_value": next_q,
            "pred_value": pred.detach(),
            "target_value": target,
        }
        return self._reduce(loss_q, self._mask(tensordict), self._priority_weights(tensordict)), metadata

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms and writes the TD error (``td_error``) into ``tensordict``."""
        keys = self._tensor_keys
        mask, weights = self._mask(tensordict), self._priority_weights(tensordict)
        actor_td = self._run_actor("actor_network", tensordict.copy())
        target, next_q = self._target(tensordict, self._noise(tensordict))
        q_actor, pred = policy_and_data_q(self, tensordict, self._get(actor_td, keys.action))
        loss_actor = self._reduce(-q_actor[0], mask, weights)
        loss_q = distance_loss(pred, target.expand_as(pred), self.loss_function).sum(0)
        tensordict.set(keys.priority, (pred - target).pow(2).detach().max(0).values)
        out = {
            "loss_actor": loss_actor,
            "loss_qvalue": self._reduce(loss_q, mask, weights),
            "pred_value": pred.detach(),
            "state_action_value_actor": q_actor.detach(),
            "next_state_value": next_q,
            "target_value": target,
        }
        return self._finalize(tensordict, out)
