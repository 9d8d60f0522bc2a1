"""Soft Actor-Critic loss for continuous actions (v1 with a state-value network, v2 without).

Haarnoja et al., "Soft Actor-Critic", https://arxiv.org/abs/1801.01290 and "Soft Actor-Critic Algorithms and
Applications", https://arxiv.org/abs/1812.05905. The Q-value ensemble (``num_qvalue_nets`` independently
initialised copies) runs as one ``torch.vmap`` call per parameter set.
"""

from __future__ import annotations

import dataclasses

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.data import TensorSpec
from tdrl.objectives._actor_critic import default_log_prob_key, rsample_log_prob
from tdrl.objectives._ensemble_heads import policy_and_data_q
from tdrl.objectives._repeat import dist_split
from tdrl.objectives._temperature import TemperatureMixin
from tdrl.objectives.common import LossModule, ParamSet
from tdrl.objectives.discrete_sac import DiscreteSACLoss  # TorchRL defines it in objectives/sac.py
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction, distance_loss

__all__ = ["DiscreteSACLoss", "SACLoss"]


class SACLoss(TemperatureMixin, LossModule["SACLoss._AcceptedKeys"]):
    """The SAC loss: ``loss_actor``, ``loss_qvalue``, ``loss_alpha`` (+ ``loss_value`` for SAC v1).

    Args:
        actor_network: stochastic policy with ``get_dist`` (reparameterisable).
        qvalue_network: Q(s, a) network writing ``"state_action_value"``; copied ``num_qvalue_nets`` times.
        value_network: optional V(s) network (SAC v1).

    Keyword Args:
        num_qvalue_nets: size of the Q ensemble (default 2).
        loss_function: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        alpha_init: initial temperature (default 1.0).
        min_alpha: lower bound of alpha.
        max_alpha: upper bound of alpha.
        action_spec: action spec, for ``target_entropy="auto"``.
        fixed_alpha: keep alpha constant (a buffer) instead of learning it.
        target_entropy: ``"auto"`` (``-dim(action)``) or a float.
        delay_actor: target actor parameters (SAC v1 value target).
        delay_qvalue: target Q parameters (default ``True``).
        delay_value: target V parameters (SAC v1, default ``True``).
        gamma: removed; must be ``None``.
        priority_key: deprecated; must be ``None``.
        separate_losses: parameters shared with the actor are trained by the actor loss only.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        scalar_output_mode: with ``reduction="none"``, ``"exclude"`` leaves the scalar diagnostics
            (``alpha``, ``entropy``) out of the output and ``"non_tensor"`` stores them as non-tensor entries;
            ``None`` (default) excludes them with a warning.
        skip_done_states: accepted for API compatibility (the next-state actor always runs on the
            full batch; done states are masked by the bootstrap).
        deactivate_vmap: accepted for API compatibility.
        use_prioritized_weights: ``"auto"``: weight by ``"priority_weight"`` when present.

    Examples:
        >>> from tdrl.data import Unbounded
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
        >>> qnet = Mod(Q(), ["observation", "action"], ["state_action_value"])
        >>> loss = SACLoss(actor, qnet, action_spec=Unbounded((2,)))
        >>> td = TensorDict({"observation": torch.randn(4, 3), "action": torch.rand(4, 2).tanh(),
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(loss(td).keys())
        ['alpha', 'entropy', 'loss_actor', 'loss_alpha', 'loss_qvalue']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`SACLoss`."""

        action: NestedKey = "action"
        value: NestedKey = "state_value"
        state_action_value: NestedKey = "state_action_value"
        log_prob: NestedKey | None = None
        priority: NestedKey = "td_error"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        priority_weight: NestedKey = "priority_weight"

        def __post_init__(self) -> None:
            if self.log_prob is None:
                self.log_prob = default_log_prob_key()

    default_value_estimator = ValueEstimators.TD0
    SUPPORTED_VALUE_ESTIMATORS: tuple[ValueEstimators, ...] = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
    _value_estimator_keys = ("value", "reward", "done", "terminated")

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        qvalue_network: TensorDictModuleBase,
        value_network: TensorDictModuleBase | None = None,
        *,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        action_spec: TensorSpec | None = None,
        fixed_alpha: bool = False,
        target_entropy: str | float = "auto",
        delay_actor: bool = False,
        delay_qvalue: bool = True,
        delay_value: bool = True,
        gamma: float | None = None,
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        skip_done_states: bool = False,
        deactivate_vmap: bool = False,
        use_prioritized_weights: str | bool = "auto",
        scalar_output_mode: str | None = None,
    ) -> None:
        super().__init__()
        if gamma is not None:
            raise TypeError("gamma is no longer a loss argument; use loss.make_value_estimator(gamma=...)")
        if priority_key is not None:
            raise TypeError("priority_key is deprecated; use loss.set_keys(priority=...)")
        self.reduction = check_reduction(reduction)
        self._set_scalar_output_mode(scalar_output_mode, "alpha, entropy")
        self.loss_function = check_loss_function(loss_function)
        self.use_prioritized_weights = use_prioritized_weights
        self.skip_done_states = skip_done_states
        self.deactivate_vmap = deactivate_vmap
        self.delay_actor, self.delay_qvalue, self.delay_value = delay_actor, delay_qvalue, delay_value
        self.num_qvalue_nets = num_qvalue_nets
        self.convert_to_functional(actor_network, "actor_network", create_target_params=delay_actor)
        shared = list(actor_network.parameters()) if separate_losses else None
        self._version = 1 if value_network is not None else 2
        if value_network is not None:
            self.convert_to_functional(
                value_network, "value_network", create_target_params=delay_value, compare_against=shared
            )
            if separate_losses:
                shared = (shared or []) + list(value_network.parameters())
        self.convert_to_functional(
            qvalue_network, "qvalue_network", num_qvalue_nets, create_target_params=delay_qvalue, compare_against=shared
        )
        self._register_split("qvalue_network")
        self.__dict__["_actor_split"] = dist_split(actor_network)
        device = self._default_device()
        self._init_temperature(
            alpha_init=alpha_init, min_alpha=min_alpha, max_alpha=max_alpha, fixed_alpha=fixed_alpha,
            target_entropy=target_entropy, action_spec=action_spec, actor_network=actor_network,
            action_key=self._tensor_keys.action, device=device,
        )
        keys = getattr(actor_network, "log_prob_keys", None)
        if keys and len(keys) == 1:
            self.set_keys(log_prob=keys[0])

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict:
        return {"value_network": None}

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        keys = [k.action, ("next", k.reward), ("next", k.done), ("next", k.terminated)]
        keys += list(self.actor_network.in_keys)
        keys += [("next", *((x,) if isinstance(x, str) else x)) for x in self.actor_network.in_keys]
        keys += list(self.qvalue_network.in_keys)
        if self._version == 1:
            keys += list(self.value_network.in_keys)
        return keys

    def _out_keys(self) -> list[str]:
        keys = ["loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"]
        return keys + ["loss_value"] if self._version == 1 else keys

    def _q_ensemble(self, td: TensorDictBase, action: Tensor, which: ParamSet) -> Tensor:
        """``Q_i(s, action)`` for every ensemble member, shaped ``[N, *batch]``."""
        td_q = td.select(*self.qvalue_network.in_keys, strict=False)
        td_q.set(self._tensor_keys.action, action)
        return self._vmap_call(
            "qvalue_network", td_q, self._tensor_keys.state_action_value, which, owned=True
        ).squeeze(-1)

    def _sample_actor(self, td: TensorDictBase, which: ParamSet = "params") -> tuple[Tensor, Tensor]:
        return rsample_log_prob(self._actor_dist(td, which))

    def _target_v2(self, tensordict: TensorDictBase, alpha: Tensor) -> Tensor:
        with torch.no_grad():
            next_td = self._next(tensordict).copy()
            next_action, next_log_prob = self._sample_actor(next_td)
            next_q = self._q_ensemble(next_td, next_action, "target")
            next_value = (next_q - alpha * next_log_prob).min(0).values.unsqueeze(-1)
            return self._bootstrap_target(tensordict, next_value).squeeze(-1)

    def _target_v1(self, tensordict: TensorDictBase) -> Tensor:
        with torch.no_grad():
            next_td = self._next(tensordict).copy()
            with self._swap("value_network", "target"):
                next_value = self._get(self.value_network(next_td), self._tensor_keys.value)
            return self._bootstrap_target(tensordict, next_value).squeeze(-1)

    def _qvalue_v1_loss(self, tensordict: TensorDictBase) -> tuple[Tensor, Tensor]:
        # SAC v1 trains each ensemble member on its own slice of the batch, as the reference does.
        n, batch = self.num_qvalue_nets, tensordict.shape[0]
        if batch % n:
            raise ValueError(f"SACLoss (v1): batch size {batch} is not divisible by num_qvalue_nets={n}")
        target = self._target_v1(tensordict).reshape(n, -1)
        chunks = tensordict.select(*self.qvalue_network.in_keys, strict=False).reshape(n, -1)
        pred = self._vmap_call("qvalue_network", chunks, self._tensor_keys.state_action_value, td_dim=0).squeeze(-1)
        loss = distance_loss(pred, target, self.loss_function).reshape(tensordict.shape)
        return loss, (pred - target).pow(2).detach().reshape(tensordict.shape)

    def _value_loss(self, tensordict: TensorDictBase, alpha: Tensor, mask, weights) -> Tensor:
        td = tensordict.select(*self.value_network.in_keys, strict=False).detach()
        with self._swap("value_network", "params"):
            pred = self._get(self.value_network(td.copy()), self._tensor_keys.value).squeeze(-1)
        with torch.no_grad():
            action, log_prob = self._sample_actor(td.copy(), "target")
            min_q = self._q_ensemble(td, action, "target").min(0).values
            target = min_q - alpha * log_prob
        return self._reduce(distance_loss(pred, target, self.loss_function), mask, weights)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms and writes the TD error (``td_error``) into ``tensordict``."""
        keys = self._tensor_keys
        alpha = self._alpha
        mask = self._mask(tensordict)
        weights = self._priority_weights(tensordict)
        out: dict[str, Tensor] = {}
        self._get(tensordict, keys.action)
        if self._version == 1:
            loss_q, td_error = self._qvalue_v1_loss(tensordict)
            loss_value = self._value_loss(tensordict, alpha, mask, weights)
        else:
            target = self._target_v2(tensordict, alpha)
        action, log_prob = self._sample_actor(tensordict.select(*self.actor_network.in_keys, strict=False))
        if self._version == 1:
            q_actor = self._q_ensemble(tensordict, action, "detached")
        else:
            q_actor, pred = policy_and_data_q(self, tensordict, action)
            loss_q = distance_loss(pred, target.expand_as(pred), self.loss_function).sum(0)
            td_error = (pred - target).abs().detach().max(0).values
        min_q = q_actor.min(0).values
        out["loss_actor"] = self._reduce(alpha * log_prob - min_q, mask, weights)
        out["loss_qvalue"] = self._reduce(loss_q, mask, weights)
        out["loss_alpha"] = self._reduce(-self.log_alpha * (log_prob.detach() + self.target_entropy), mask, weights)
        if self._version == 1:
            out["loss_value"] = loss_value
        tensordict.set(keys.priority, td_error)
        if self.reduction != "none":
            out["alpha"] = alpha
            out["entropy"] = -log_prob.detach().mean()
        elif self.scalar_output_mode == "non_tensor":
            return self._finalize(tensordict, out, {"alpha": alpha, "entropy": -log_prob.detach().mean()})
        return self._finalize(tensordict, out)
