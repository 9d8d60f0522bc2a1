"""DQN losses: :class:`DQNLoss` (with double DQN) and :class:`DistributionalDQNLoss` (C51).

Mnih et al., "Human-level control through deep reinforcement learning", https://doi.org/10.1038/nature14236;
van Hasselt et al., "Deep Reinforcement Learning with Double Q-learning", https://arxiv.org/abs/1509.06461;
Bellemare et al., "A Distributional Perspective on Reinforcement Learning", https://arxiv.org/abs/1707.06887.
"""

from __future__ import annotations

import dataclasses
from typing import cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase, TensorDictSequential
from tensordict.utils import NestedKey
from torch import Tensor, nn

from tdrl.data import TensorSpec
from tdrl.modules.tensordict_module.action_space import find_action_space
from tdrl.modules.tensordict_module.qvalue import QValueModule
from tdrl.objectives._discrete import chosen_action_value
from tdrl.objectives.common import LossModule, ParamSet
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction, distance_loss

__all__ = ["DQNLoss", "DistributionalDQNLoss"]


def _greedy_head(value_network: nn.Module) -> tuple[TensorDictModuleBase, NestedKey] | None:
    """``(head, action_value_key)`` when ``value_network`` ends with a plain greedy :class:`QValueModule`.

    The loss only reads the action values and their max; the greedy module's one-hot/argmax action and
    chosen value are discarded, so the loss runs the head alone (same values, same gradients).
    """
    if not isinstance(value_network, TensorDictSequential) or len(value_network.module) < 2:
        return None
    last = value_network.module[-1]
    if type(last) is not QValueModule or last.action_mask_key is not None:
        return None
    if last.action_space not in ("one_hot", "categorical"):
        return None
    layers = value_network.module[:-1]
    head = layers[0] if len(layers) == 1 else TensorDictSequential(*layers)
    return cast(TensorDictModuleBase, head), last.action_value_key


def _check_value_network(value_network: nn.Module) -> TensorDictModuleBase:
    if not isinstance(value_network, TensorDictModuleBase):
        raise TypeError(
            "value_network must be a TensorDict module writing 'action_value' (e.g. a QValueActor), got "
            f"{type(value_network).__name__}"
        )
    return value_network


class DQNLoss(LossModule["DQNLoss._AcceptedKeys"]):
    """The DQN loss: ``distance(Q(s, a), r + gamma * (1 - terminated) * max_a' Q_target(s', a'))``.

    Writes the squared TD error in the input's ``"td_error"`` entry (for prioritized replay) and returns
    a single ``"loss"``.

    Args:
        value_network: a Q-value network writing ``"action_value"`` (and ``"chosen_action_value"``,
            as :class:`~tdrl.modules.QValueActor` does).

    Keyword Args:
        loss_function: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
        delay_value: keep a target network (default ``True``).
        double_dqn: pick the next action with the online network and value it with the target one.
        gamma: removed from the constructor (use ``make_value_estimator(gamma=...)``); must be ``None``.
        action_space: ``"one-hot"``, ``"categorical"``, ``"mult-one-hot"``, ``"binary"`` or a spec;
            inferred from the network's spec when omitted.
        priority_key: deprecated; must be ``None`` (use ``set_keys(priority=...)``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        use_prioritized_weights: ``"auto"`` (default): weight by ``"priority_weight"`` when present.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> net = TensorDictModule(nn.Linear(3, 2), ["observation"], ["action_value"])
        >>> loss = DQNLoss(net, action_space="one-hot")
        >>> td = TensorDict({"observation": torch.randn(5, 3),
        ...                  "action": torch.nn.functional.one_hot(torch.randint(2, (5,)), 2),
        ...                  ("next", "observation"): torch.randn(5, 3),
        ...                  ("next", "reward"): torch.randn(5, 1),
        ...                  ("next", "done"): torch.zeros(5, 1, dtype=torch.bool)}, [5])
        >>> loss(td)["loss"].shape, td["td_error"].shape
        (torch.Size([]), torch.Size([5, 1]))
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DQNLoss`."""

        advantage: NestedKey = "advantage"
        value_target: NestedKey = "value_target"
        value: NestedKey = "chosen_action_value"
        action_value: NestedKey = "action_value"
        action: NestedKey = "action"
        priority: NestedKey = "td_error"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        priority_weight: NestedKey = "priority_weight"

    default_value_estimator = ValueEstimators.TD0
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)

    def __init__(
        self,
        value_network: nn.Module,
        *,
        loss_function: str | None = "l2",
        delay_value: bool = True,
        double_dqn: bool = False,
        gamma: float | None = None,
        action_space: str | TensorSpec | None = None,
        priority_key: str | None = None,
        reduction: str | None = None,
        use_prioritized_weights: str | bool = "auto",
    ) -> None:
        super().__init__()
        if gamma is not None:
            raise TypeError("gamma is no longer a DQNLoss argument; use loss.make_value_estimator(gamma=...)")
        if priority_key is not None:
            raise TypeError("priority_key is deprecated; use loss.set_keys(priority=...)")
        if double_dqn and not delay_value:
            raise ValueError("double_dqn=True requires delay_value=True.")
        self.double_dqn = double_dqn
        self.delay_value = delay_value
        self.loss_function = check_loss_function(loss_function or "l2")
        self.reduction = check_reduction(reduction)
        self.use_prioritized_weights = use_prioritized_weights
        value_network = _check_value_network(value_network)
        self.convert_to_functional(value_network, "value_network", create_target_params=delay_value)
        if action_space is None:
            action_space = getattr(value_network, "action_space", None) or getattr(value_network, "spec", None)
        if action_space is None:
            raise ValueError(
                "DQNLoss: the action space could not be read from the value network; pass action_space="
            )
        self.action_space = find_action_space(action_space).replace("_", "-")
        # Not a submodule: the head's parameters are the value network's own (no state_dict change).
        self.__dict__["_greedy_head"] = _greedy_head(value_network)

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict:
        return {"value_network": None}

    def _action_values(self, tensordict: TensorDictBase, which: ParamSet = "params") -> Tensor:
        """``action_value`` of the network on ``tensordict`` (a copy the caller owns)."""
        key = self._tensor_keys.action_value
        split = self._greedy_head
        if split is None or split[1] != key:
            return self._get(self._call("value_network", tensordict, which), key)
        with self._swap("value_network", which):
            return self._get(split[0](tensordict), key)

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        net_keys = list(self.value_network.in_keys)
        return [
            k.action,
            ("next", k.reward),
            ("next", k.done),
            ("next", k.terminated),
            *net_keys,
            *[("next", *((key,) if isinstance(key, str) else key)) for key in net_keys],
        ]

    def _out_keys(self) -> list[str]:
        return ["loss"]

    def _next_value(self, next_td: TensorDictBase) -> Tensor:
        keys = self._tensor_keys
        if self.double_dqn:
            online = self._call("value_network", next_td.copy(), "detached")
            next_action = self._get(online, keys.action)
            target = self._call("value_network", next_td, "target")
            return chosen_action_value(self._get(target, keys.action_value), next_action, self.action_space).unsqueeze(-1)
        split = self._greedy_head
        if split is not None and split[1] == keys.action_value:
            return self._action_values(next_td, "target").max(-1, keepdim=True).values
        out = self._call("value_network", next_td, "target")
        value = out.get(keys.value, None)
        if value is None:
            # A plain network writing only action values: the greedy value is their max.
            value = self._get(out, keys.action_value).max(-1, keepdim=True).values
        return value

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss and writes the priorities (``td_error``) into ``tensordict``."""
        keys = self._tensor_keys
        values = self._action_values(tensordict.copy())
        pred = chosen_action_value(values, self._get(tensordict, keys.action), self.action_space)
        with torch.no_grad():
            next_value = self._next_value(self._next(tensordict).copy())
            target = self._bootstrap_target(tensordict, next_value).squeeze(-1)
            priority = (pred - target).pow(2).unsqueeze(-1)
        tensordict.set(keys.priority, priority, inplace=True)
        loss = distance_loss(pred, target, self.loss_function)
        loss = self._reduce(loss, self._mask(tensordict), self._priority_weights(tensordict))
        return self._finalize(tensordict, {"loss": loss})


class DistributionalDQNLoss(LossModule["DistributionalDQNLoss._AcceptedKeys"]):
    """The C51 distributional DQN loss (cross-entropy to the projected target distribution).

    Args:
        value_network: a distributional Q network writing log-probabilities ``"action_value"`` of shape
            ``[*batch, atoms, n_actions]`` and holding a ``support`` buffer (e.g. ``DistributionalQValueActor``).

    Keyword Args:
        gamma: discount (a buffer, schedulable).
        delay_value: keep a target network (default ``True``).
        priority_key: deprecated; must be ``None``.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        use_prioritized_weights: ``"auto"`` (default): weight by ``"priority_weight"`` when present.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.lin = nn.Linear(3, 5 * 2)
        ...         self.register_buffer("support", torch.linspace(-1, 1, 5))
        ...     def forward(self, obs):
        ...         logits = self.lin(obs).view(*obs.shape[:-1], 5, 2).log_softmax(-2)
        ...         q = (logits.exp() * self.support.unsqueeze(-1)).sum(-2)
        ...         return logits, torch.nn.functional.one_hot(q.argmax(-1), 2)
        >>> net = TensorDictModule(Net(), ["observation"], ["action_value", "action"])
        >>> net.action_space = "one-hot"
        >>> loss = DistributionalDQNLoss(net, gamma=0.9)
        >>> td = TensorDict({"observation": torch.randn(4, 3),
        ...                  "action": torch.nn.functional.one_hot(torch.randint(2, (4,)), 2),
        ...                  ("next", "observation"): torch.randn(4, 3),
        ...                  ("next", "reward"): torch.randn(4, 1),
        ...                  ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> loss(td)["loss"].shape
        torch.Size([])
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DistributionalDQNLoss`."""

        action_value: NestedKey = "action_value"
        action: NestedKey = "action"
        priority: NestedKey = "td_error"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        steps_to_next_obs: NestedKey = "steps_to_next_obs"
        priority_weight: NestedKey = "priority_weight"

    default_value_estimator = ValueEstimators.TD0
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0,)

    def __init__(
        self,
        value_network: nn.Module,
        *,
        gamma: float,
        delay_value: bool = True,
        priority_key: str | None = None,
        reduction: str | None = None,
        use_prioritized_weights: str | bool = "auto",
    ) -> None:
        super().__init__()
        if priority_key is not None:
            raise TypeError("priority_key is deprecated; use loss.set_keys(priority=...)")
        self.register_buffer("gamma", torch.tensor(float(gamma)))
        self.delay_value = delay_value
        self.reduction = check_reduction(reduction)
        self.use_prioritized_weights = use_prioritized_weights
        value_network = _check_value_network(value_network)
        self.convert_to_functional(value_network, "value_network", create_target_params=delay_value)
        self.action_space = find_action_space(getattr(value_network, "action_space", "one-hot")).replace("_", "-")
        support_keys = [k for k in self.value_network_params.keys(True, True) if (k if isinstance(k, str) else k[-1]) == "support"]
        if not support_keys:
            raise ValueError("DistributionalDQNLoss: the value network holds no 'support' buffer")
        self._support_key = support_keys[0]
        support = self.value_network_params.get(self._support_key)
        # The support is a constant buffer: read its range once, not with .item() in forward.
        self._vmin, self._vmax, self._atoms = float(support.min()), float(support.max()), support.numel()

    def make_value_estimator(self, value_type: ValueEstimators | None = None, **hyperparams) -> LossModule:
        """Only TD(0) is supported (the projection is the estimator)."""
        value_type = value_type or ValueEstimators.TD0
        if value_type is not ValueEstimators.TD0:
            raise ValueError(f"DistributionalDQNLoss supports only TD0, got {value_type}")
        self.value_type = value_type
        return self

    def _out_keys(self) -> list[str]:
        return ["loss"]

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        return [k.action, ("next", k.reward), ("next", k.done), *self.value_network.in_keys]

    def _log_p_taken(self, log_p: Tensor, action: Tensor) -> Tensor:
        # log_p: [B, atoms, n_actions] -> [B, atoms]
        if self.action_space == "categorical":
            if action.ndim == log_p.ndim - 2:
                action = action.unsqueeze(-1)
            index = action.long().unsqueeze(-2).expand(*log_p.shape[:-1], 1)
            return torch.gather(log_p, -1, index).squeeze(-1)
        return (log_p * action.to(log_p.dtype).unsqueeze(-2)).sum(-1)

    def _projected_target(self, tensordict: TensorDictBase, support: Tensor) -> Tensor:
        keys = self._tensor_keys
        next_td = self._next(tensordict).copy()
        online = self._call("value_network", next_td.copy(), "detached")
        next_action = self._get(online, keys.action)
        target = self._call("value_network", next_td, "target")
        p_next = self._log_p_taken(self._get(target, keys.action_value), next_action).exp()
        reward = self._get(tensordict, ("next", keys.reward))
        terminated = tensordict.get(("next", keys.terminated), None)
        if terminated is None:
            terminated = self._get(tensordict, ("next", keys.done))
        steps = tensordict.get(keys.steps_to_next_obs, None)
        discount = self.gamma if steps is None else self.gamma**steps
        atoms = self._atoms
        tz = (reward + (~terminated.bool()).to(reward.dtype) * discount * support).clamp(self._vmin, self._vmax)
        b = (tz - self._vmin) / ((self._vmax - self._vmin) / (atoms - 1))
        low, up = b.floor().long(), b.ceil().long()
        # When b lands on an atom, split its mass between neighbours as the reference does.
        low = torch.where((up > 0) & (low == up), low - 1, low)
        up = torch.where((low < atoms - 1) & (low == up), up + 1, up)
        m = torch.zeros_like(p_next)
        m.scatter_add_(-1, low, p_next * (up.to(b.dtype) - b))
        m.scatter_add_(-1, up, p_next * (b - low.to(b.dtype)))
        return m

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss and writes per-sample cross-entropies as priorities."""
        keys = self._tensor_keys
        support = self.value_network_params.get(self._support_key)
        out = self._call("value_network", tensordict.copy())
        log_p = self._log_p_taken(self._get(out, keys.action_value), self._get(tensordict, keys.action))
        with torch.no_grad():
            m = self._projected_target(tensordict, support)
        loss = -(m * log_p).sum(-1)
        tensordict.set(keys.priority, loss.detach().unsqueeze(-1), inplace=True)
        loss = self._reduce(loss, self._mask(tensordict), self._priority_weights(tensordict))
        return self._finalize(tensordict, {"loss": loss})
