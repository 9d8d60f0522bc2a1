"""DDPG loss: deterministic policy gradient with a (target) Q network.

Lillicrap et al., "Continuous control with deep reinforcement learning", https://arxiv.org/abs/1509.02971.
"""

from __future__ import annotations

import dataclasses
from typing import cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase, TensorDictSequential
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.objectives.common import LossModule
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction, distance_loss

__all__ = ["DDPGLoss"]


def as_next(key: NestedKey) -> NestedKey:
    """``("next", *key)``.

    Examples:
        >>> as_next("observation")
        ('next', 'observation')
    """
    return ("next", *((key,) if isinstance(key, str) else key))


class DDPGLoss(LossModule["DDPGLoss._AcceptedKeys"]):
    """DDPG: ``loss_actor = -Q(s, pi(s))``, ``loss_value = distance(Q(s, a), r + gamma * Q'(s', pi'(s')))``.

    Args:
        actor_network: deterministic policy writing ``"action"``.
        value_network: Q(s, a) network writing ``"state_action_value"``.

    Keyword Args:
        loss_function: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
        delay_actor: target policy parameters (default ``False``).
        delay_value: target Q parameters (default ``True``).
        gamma: removed; must be ``None``.
        separate_losses: parameters shared with the actor are trained by the actor loss only.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        use_prioritized_weights: ``"auto"``: weight by ``"priority_weight"`` when present.

    Examples:
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> class Q(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.lin = torch.nn.Linear(5, 1)
        ...     def forward(self, obs, act):
        ...         return self.lin(torch.cat([obs, act], -1))
        >>> loss = DDPGLoss(Mod(torch.nn.Linear(3, 2), ["observation"], ["action"]),
        ...                 Mod(Q(), ["observation", "action"], ["state_action_value"]))
        >>> td = TensorDict({"observation": torch.randn(4, 3), "action": torch.randn(4, 2),
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(k for k in loss(td).keys() if k.startswith("loss"))
        ['loss_actor', 'loss_value']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DDPGLoss`."""

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
        value_network: TensorDictModuleBase,
        *,
        loss_function: str = "l2",
        delay_actor: bool = False,
        delay_value: bool = True,
        gamma: float | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        use_prioritized_weights: str | bool = "auto",
    ) -> None:
        super().__init__()
        if gamma is not None:
            raise TypeError("gamma is no longer a loss argument; use loss.make_value_estimator(gamma=...)")
        self.delay_actor, self.delay_value = delay_actor, delay_value
        self.loss_function = check_loss_function(loss_function)
        self.reduction = check_reduction(reduction)
        self.use_prioritized_weights = use_prioritized_weights
        self.convert_to_functional(actor_network, "actor_network", create_target_params=delay_actor)
        shared = list(actor_network.parameters()) if separate_losses else None
        self.convert_to_functional(value_network, "value_network", create_target_params=delay_value, compare_against=shared)
        self._register_split("value_network")

    def _split_key(self, name: str) -> NestedKey | None:
        # The action is what the actor writes and the value network reads.
        keys = [k for k in self.actor_network.out_keys if k in self.value_network.in_keys]
        return keys[0] if len(keys) == 1 else None

    def _register_split(self, name: str) -> None:
        super()._register_split(name)
        split = self._splits[name]
        # The trunk is shared when the value network's state-only prefix is the start of the actor (the same
        # modules, each network on its own parameters) and the actor does not overwrite its outputs.
        actor, n = self.actor_network, 0 if split is None else len(split[0].module)
        shared = (
            split is not None
            and n > 0
            and isinstance(actor, TensorDictSequential)
            and len(actor.module) > n
            and all(a is b for a, b in zip(actor.module[:n], split[0].module))
            and self._stateful["actor_network"]
            and self._stateful["value_network"]
            and not set(split[0].out_keys) & {k for m in actor.module[n:] for k in cast(TensorDictModuleBase, m).out_keys}
        )
        self.__dict__["_shared_trunk"] = shared

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict:
        return {"value_network": None}

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        nets = [*self.actor_network.in_keys, *self.value_network.in_keys]
        return [("next", k.reward), ("next", k.done), ("next", k.terminated), *nets, *[as_next(x) for x in nets]]

    def _out_keys(self) -> list[str]:
        return ["loss_actor", "loss_value", "pred_value", "target_value", "pred_value_max", "target_value_max"]

    def _q_on_actor_trunk(self, data: TensorDictBase, actor_td: TensorDictBase) -> tuple[Tensor, Tensor]:
        """``(Q(s, a), Q(s, pi(s)) with detached parameters)`` from the trunk output the actor computed: the
        value network's head runs twice, its trunk not at all. The detached call reads the trunk output
        detached, so the actor loss sends no gradient into the critic (as with the full detached call)."""
        split, action_key = self._splits["value_network"], self._split_key("value_network")
        # Only called when the trunk is shared, which needs a split before a single action key.
        assert split is not None and action_key is not None
        suffix = split[1]
        hidden = {k: actor_td.get(k) for k in suffix.in_keys if k != action_key}
        out_key = self._tensor_keys.state_action_value
        pred_td = TensorDict({**hidden, action_key: self._get(data, action_key)}, batch_size=data.batch_size)
        pred = self._get(suffix(pred_td), out_key).squeeze(-1)
        actor_in = {k: v.detach() for k, v in hidden.items()}
        actor_in[action_key] = self._get(actor_td, action_key)
        with self._swap("value_network", "detached"):
            q = self._get(suffix(TensorDict(actor_in, batch_size=data.batch_size)), out_key).squeeze(-1)
        return pred, q

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms and writes the TD error (``td_error``) into ``tensordict``."""
        keys = self._tensor_keys
        mask, weights = self._mask(tensordict), self._priority_weights(tensordict)
        for key in self.value_network.in_keys:
            self._get(tensordict, key)
        # Inputs are detached (as TorchRL does): data collected with grad enabled must not backpropagate
        # into the collection graph.
        data = tensordict.detach()
        if self._shared_trunk:
            actor_td = self._run_actor("actor_network", data.copy())
            pred, q = self._q_on_actor_trunk(data, actor_td)
        else:
            pred = self._get(self._call("value_network", data.copy()), keys.state_action_value).squeeze(-1)
        with torch.no_grad():
            next_td = self._run_actor("actor_network", self._next(tensordict).copy(), "target")
            next_value = self._get(self._call("value_network", next_td, "target"), keys.state_action_value)
            target = self._bootstrap_target(tensordict, next_value).squeeze(-1)
            td_error = (pred - target).pow(2)
        tensordict.set(keys.priority, td_error, inplace=True)
        loss_value = self._reduce(distance_loss(pred, target, self.loss_function), mask, weights)
        if not self._shared_trunk:
            actor_td = self._run_actor("actor_network", data.copy())
            q = self._get(self._call("value_network", actor_td, "detached"), keys.state_action_value).squeeze(-1)
        out = {
            "loss_actor": self._reduce(-q, mask, weights),
            "loss_value": loss_value,
            "td_error": td_error,
            "pred_value": pred.detach(),
            "target_value": target,
            "target_value_max": target.max(),
            "pred_value_max": pred.detach().max(),
        }
        return self._finalize(tensordict, out)
