"""QMIX / VDN value decomposition: :class:`QMixerLoss`.

Rashid et al., "QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent Reinforcement Learning",
https://arxiv.org/abs/1803.11485; Sunehag et al., "Value-Decomposition Networks For Cooperative Multi-Agent
Learning", https://arxiv.org/abs/1706.05296.
"""

from __future__ import annotations

import dataclasses

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor, nn

from tdrl.data import TensorSpec
from tdrl.modules.tensordict_module.action_space import find_action_space
from tdrl.objectives._discrete import chosen_action_value
from tdrl.objectives._functional import as_key
from tdrl.objectives.common import LossModule, ParamSet
from tdrl.objectives.utils import ValueEstimators, check_loss_function, distance_loss

__all__ = ["QMixerLoss"]


class QMixerLoss(LossModule):
    """DQN on the mixed (team) value: ``distance(mix(Q_i(o_i, a_i), s), r + gamma * mix'(max_a Q'_i(o'_i, a), s'))``.

    The local network writes per-agent action values (``("agents", "action_value")``, ``[*B, n_agents,
    n_actions]``); the values of the taken actions (``[*B, n_agents, 1]``) are mixed into one team value
    (``"chosen_action_value"``, ``[*B, 1]``) by the mixer, e.g. :class:`~tdrl.modules.QMixer` or
    :class:`~tdrl.modules.VDNMixer`. The target mixes the greedy values of the target local network on the next
    step with the target mixer. Writes the squared team TD error in ``"td_error"`` (``[*B, 1]``) and returns
    one ``"loss"``.

    Args:
        local_value_network: a TensorDict module writing ``("agents", "action_value")`` (e.g. a network
            followed by a :class:`~tdrl.modules.QValueModule` on the agents' keys).
        mixer_network: a TensorDict module reading ``("agents", "chosen_action_value")`` (and a state) and
            writing ``"chosen_action_value"``; a plain module is wrapped with these keys.

    Keyword Args:
        loss_function: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
        delay_value: keep target copies of both networks (default ``True``).
        gamma: removed from the constructor (use ``make_value_estimator(gamma=...)``); must be ``None``.
        action_space: ``"one-hot"``, ``"categorical"``, ... or a spec; read from the local network's
            ``spec`` / ``action_space`` when omitted.
        priority_key: deprecated; must be ``None`` (use ``set_keys(priority=...)``).

    The reduction of the loss is the attribute ``reduction`` (``"mean"``, as TorchRL; ``"sum"`` or ``"none"``
    can be set after construction).

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.modules import VDNMixer
        >>> qnet = TensorDictModule(torch.nn.Linear(4, 3), [("agents", "observation")], [("agents", "action_value")])
        >>> mixer = TensorDictModule(VDNMixer(n_agents=2, device="cpu"), [("agents", "chosen_action_value")],
        ...                          ["chosen_action_value"])
        >>> loss = QMixerLoss(qnet, mixer, action_space="categorical")
        >>> td = TensorDict({"agents": {"observation": torch.randn(5, 2, 4), "action": torch.randint(3, (5, 2))},
        ...     "next": {"agents": {"observation": torch.randn(5, 2, 4)}, "reward": torch.randn(5, 1),
        ...              "done": torch.zeros(5, 1, dtype=torch.bool)}}, [5])
        >>> loss(td)["loss"].shape, td["td_error"].shape
        (torch.Size([]), torch.Size([5, 1]))
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`QMixerLoss`."""

        advantage: NestedKey = "advantage"
        value_target: NestedKey = "value_target"
        local_value: NestedKey = ("agents", "chosen_action_value")
        global_value: NestedKey = "chosen_action_value"
        action_value: NestedKey = ("agents", "action_value")
        action: NestedKey = ("agents", "action")
        priority: NestedKey = "td_error"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"

    default_value_estimator = ValueEstimators.TD0
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)

    def __init__(
        self,
        local_value_network: nn.Module,
        mixer_network: nn.Module,
        *,
        loss_function: str | None = "l2",
        delay_value: bool = True,
        gamma: float | None = None,
        action_space: str | TensorSpec | None = None,
        priority_key: str | None = None,
    ) -> None:
        super().__init__()
        if gamma is not None:
            raise TypeError(
                "gamma is no longer a QMixerLoss argument; use loss.make_value_estimator(gamma=...)"
            )
        self._set_deprecated_ctor_keys(priority=priority_key)
        if not isinstance(local_value_network, TensorDictModuleBase):
            raise TypeError(
                "QMixerLoss: local_value_network must be a TensorDict module writing ('agents', 'action_value'), "
                f"got {type(local_value_network).__name__}"
            )
        if not isinstance(mixer_network, TensorDictModuleBase):
            mixer_network = TensorDictModule(
                mixer_network,
                in_keys=[self._tensor_keys.local_value],
                out_keys=[self._tensor_keys.global_value],
            )
        self.delay_value = delay_value
        self.loss_function = check_loss_function(loss_function or "l2")
        if action_space is None:
            action_space = getattr(local_value_network, "action_space", None) or getattr(
                local_value_network, "spec", None
            )
        if action_space is None:
            raise ValueError(
                "QMixerLoss: the action space could not be read from the local value network; pass action_space="
            )
        self.action_space = find_action_space(action_space).replace("_", "-")
        self.convert_to_functional(
            local_value_network, "local_value_network", create_target_params=delay_value
        )
        self.convert_to_functional(mixer_network, "mixer_network", create_target_params=delay_value)

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict:
        return {"value_network": None}

    def _forward_value_estimator_keys(self) -> None:
        est = self._value_estimator
        if est is None or not hasattr(est, "set_keys"):
            return
        k = self._tensor_keys
        est.set_keys(
            advantage=k.advantage,
            value_target=k.value_target,
            value=k.global_value,
            reward=k.reward,
            done=k.done,
            terminated=k.terminated,
        )

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        produced = {as_key(k.local_value)}
        net_keys = [
            *self.local_value_network.in_keys,
            *[key for key in self.mixer_network.in_keys if as_key(key) not in produced],
        ]
        return [
            k.action,
            ("next", k.reward),
            ("next", k.done),
            ("next", k.terminated),
            *net_keys,
            *[("next", *as_key(key)) for key in net_keys],
        ]

    def _out_keys(self) -> list[str]:
        return ["loss"]

    def _mixed(self, td: TensorDictBase, local_value: Tensor, which: ParamSet) -> Tensor:
        """The mixer's team value ``[*B, 1]`` of ``local_value`` (``[*B, n_agents, 1]``) written into ``td``."""
        k = self._tensor_keys
        td.set(k.local_value, local_value)
        return self._get(self._call("mixer_network", td, which), k.global_value)

    def _next_team_value(self, next_td: TensorDictBase) -> Tensor:
        """``mix'(max_a Q'_i(o'_i, a), s')`` with the target networks (``[*B, 1]``)."""
        values = self._get(
            self._call("local_value_network", next_td, "target"), self._tensor_keys.action_value
        )
        return self._mixed(next_td, values.max(-1, keepdim=True).values, "target")

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss and writes the team priorities (``td_error``) into ``tensordict``."""
        k = self._tensor_keys
        td = tensordict.copy()
        values = self._get(self._call("local_value_network", td), k.action_value)  # [*B, n_agents, n_actions]
        local = chosen_action_value(values, self._get(tensordict, k.action), self.action_space).unsqueeze(-1)
        pred = self._mixed(td, local, "params").squeeze(-1)
        with torch.no_grad():
            next_value = self._next_team_value(self._next(tensordict).copy())
            target = self._bootstrap_target(tensordict, next_value).squeeze(-1)
            priority = (pred - target).pow(2).unsqueeze(-1)
        tensordict.set(k.priority, priority, inplace=True)
        loss = distance_loss(pred, target, self.loss_function)
        return self._finalize(tensordict, {"loss": self._reduce(loss, self._mask(tensordict))})
