"""Conservative Q-Learning loss for continuous actions.

Kumar et al., "Conservative Q-Learning for Offline Reinforcement Learning", https://arxiv.org/abs/2006.04779.
"""

from __future__ import annotations

import dataclasses
import math
from typing import cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor
from torch.distributions import Distribution

from tdrl.data import TensorSpec
from tdrl.objectives._actor_critic import rsample_log_prob
from tdrl.objectives._discrete import chosen_action_value
from tdrl.objectives._repeat import dist_split, gather_rows
from tdrl.objectives._temperature import TemperatureMixin
from tdrl.objectives.common import LossModule, ParamSet
from tdrl.objectives.ddpg import as_next
from tdrl.objectives.dqn import DQNLoss
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction, distance_loss

__all__ = ["CQLLoss", "DiscreteCQLLoss"]


class CQLLoss(TemperatureMixin, LossModule["CQLLoss._AcceptedKeys"]):
    """CQL(H): SAC losses plus the conservative penalty ``logsumexp_a Q(s, a) - Q(s, a_data)``.

    The penalty samples ``num_random`` uniform actions and ``num_random`` policy actions at ``s`` and
    ``s'`` for each transition and runs the twin Q networks on all of them in one vmapped call.

    Args:
        actor_network: stochastic policy (``get_dist``).
        qvalue_network: Q(s, a) network (two copies).

    Keyword Args:
        loss_function: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        alpha_init: initial temperature (default 1.0).
        min_alpha: lower bound of alpha.
        max_alpha: upper bound of alpha.
        action_spec: action spec, for ``target_entropy="auto"``.
        fixed_alpha: keep alpha constant.
        target_entropy: ``"auto"`` or a float.
        delay_actor: target actor parameters.
        delay_qvalue: target Q parameters (default ``True``).
        gamma: removed; must be ``None``.
        temperature: temperature of the logsumexp (default 1.0).
        min_q_weight: weight of the penalty (default 1.0).
        max_q_backup: bootstrap on the max over ``num_random`` policy actions.
        deterministic_backup: no entropy term in the bootstrap (default ``True``).
        num_random: sampled actions per transition (default 10).
        with_lagrange: learn the penalty weight (``log_alpha_prime``).
        lagrange_thresh: target action gap of the Lagrange variant.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        scalar_output_mode: with ``reduction="none"``, ``"exclude"`` leaves the scalar diagnostics
            (``alpha``, ``entropy``) out of the output and ``"non_tensor"`` stores them as non-tensor entries;
            ``None`` (default) excludes them with a warning.
        deactivate_vmap: accepted for API compatibility.

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
        >>> loss = CQLLoss(actor, Mod(Q(), ["observation", "action"], ["state_action_value"]),
        ...                action_spec=Unbounded((2,)))
        >>> td = TensorDict({"observation": torch.randn(4, 3), "action": torch.rand(4, 2) - 0.5,
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(k for k in loss(td).keys() if k.startswith("loss"))
        ['loss_actor', 'loss_actor_bc', 'loss_alpha', 'loss_cql', 'loss_qvalue']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`CQLLoss`."""

        action: NestedKey = "action"
        value: NestedKey = "state_value"
        state_action_value: NestedKey = "state_action_value"
        log_prob: NestedKey = "_log_prob"
        pred_q1: NestedKey = "pred_q1"
        pred_q2: NestedKey = "pred_q2"
        priority: NestedKey = "td_error"
        cql_q1_loss: NestedKey = "cql_q1_loss"
        cql_q2_loss: NestedKey = "cql_q2_loss"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"

    default_value_estimator = ValueEstimators.TD0
    _target_entropy_name = "target_entropy_buffer"
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
    _value_estimator_keys = ("value", "reward", "done", "terminated")

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        qvalue_network: TensorDictModuleBase,
        *,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        action_spec: TensorSpec | None = None,
        fixed_alpha: bool = False,
        target_entropy: str | float = "auto",
        delay_actor: bool = False,
        delay_qvalue: bool = True,
        gamma: float | None = None,
        temperature: float = 1.0,
        min_q_weight: float = 1.0,
        max_q_backup: bool = False,
        deterministic_backup: bool = True,
        num_random: int = 10,
        with_lagrange: bool = False,
        lagrange_thresh: float = 0.0,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
        scalar_output_mode: str | None = None,
    ) -> None:
        super().__init__()
        if gamma is not None:
            raise TypeError("gamma is no longer a loss argument; use loss.make_value_estimator(gamma=...)")
        self.delay_actor, self.delay_qvalue = delay_actor, delay_qvalue
        self.deactivate_vmap = deactivate_vmap
        self.num_qvalue_nets = 2
        self.loss_function = check_loss_function(loss_function)
        self.reduction = check_reduction(reduction)
        self._set_scalar_output_mode(scalar_output_mode, "alpha, entropy")
        self.convert_to_functional(actor_network, "actor_network", create_target_params=delay_actor)
        self.convert_to_functional(
            qvalue_network, "qvalue_network", 2, create_target_params=delay_qvalue,
            compare_against=list(actor_network.parameters()),
        )
        device = self._default_device()
        self._init_temperature(
            alpha_init=alpha_init, min_alpha=min_alpha, max_alpha=max_alpha, fixed_alpha=fixed_alpha,
            target_entropy=target_entropy, action_spec=action_spec, actor_network=actor_network,
            action_key=self._tensor_keys.action, device=device,
        )
        self.temperature, self.min_q_weight = temperature, min_q_weight
        self.max_q_backup, self.deterministic_backup = max_q_backup, deterministic_backup
        self.num_random = num_random
        # Not submodules: parts of the networks above, for the penalty's repeated rows (see _repeat.py).
        self.__dict__["_actor_split"] = dist_split(actor_network)
        self._register_split("qvalue_network")
        self.with_lagrange = with_lagrange
        if with_lagrange:
            self.target_action_gap = lagrange_thresh
            self.log_alpha_prime = torch.nn.Parameter(torch.zeros((), device=device))

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
        keys = ["loss_actor", "loss_actor_bc", "loss_qvalue", "loss_cql", "loss_alpha", "alpha", "entropy"]
        return keys + ["loss_alpha_prime"] if self.with_lagrange else keys

    # ----------------------------------------------------------------- pieces
    def _q(self, td: TensorDictBase, which: ParamSet) -> Tensor:
        """Twin Q values ``[2, *batch, 1]``."""
        td_q = td.select(*self.qvalue_network.in_keys, strict=False)
        return self._vmap_call("qvalue_network", td_q, self._tensor_keys.state_action_value, which)

    def _policy(self, td: TensorDictBase, which: ParamSet = "params") -> tuple[Tensor, Tensor, Distribution]:
        with self._swap("actor_network", which):
            dist = self.actor_network.get_dist(td)
        action, log_prob = rsample_log_prob(dist)
        return action, log_prob, dist

    def _obs(self, td: TensorDictBase, repeats: int) -> TensorDictBase:
        """The actor's inputs, each row repeated ``repeats`` times (``[B * repeats]``)."""
        keys = self.actor_network.in_keys
        data = {k: self._get(td, k).repeat_interleave(repeats, dim=td.ndim - 1) for k in keys}
        return TensorDict(data, batch_size=[*td.shape[:-1], td.shape[-1] * repeats])

    def _target(self, tensordict: TensorDictBase) -> Tensor:
        with torch.no_grad():
            next_td = self._next(tensordict).copy()
            # The policy sample at s' is drawn in both branches (same random stream as the reference).
            action, log_prob, _ = self._policy(next_td, "detached")
            if self.max_q_backup:
                obs = self._obs(next_td, self.num_random)
                many, _, _ = self._policy(obs.copy(), "detached")
                obs.set(self._tensor_keys.action, many)
                q = self._q(obs, "target").reshape(self.num_qvalue_nets, *tensordict.shape, self.num_random, -1)
                next_value = q.max(-2).values.min(0).values
            else:
                next_td.set(self._tensor_keys.action, action)
                next_value = self._q(next_td, "target").min(0).values
                if not self.deterministic_backup:
                    next_value = next_value - self._alpha * log_prob.unsqueeze(-1)
            return self._bootstrap_target(tensordict, next_value).squeeze(-1)

    def _repeated_policy(self, td: TensorDictBase, repeats: int) -> tuple[Tensor, Tensor]:
        """Detached policy samples for each row of ``td`` repeated ``repeats`` times (``[B * repeats]``)."""
        split = self._actor_split
        if split is None or td.ndim != 1:
            action, log_prob, _ = self._policy(self._obs(td, repeats), "detached")
            return action, log_prob
        det, prob = split
        src = TensorDict({k: self._get(td, k) for k in self.actor_network.in_keys}, batch_size=td.shape)
        with self._swap("actor_network", "detached"):
            params = det(src)
        index = torch.arange(td.shape[0], device=td.device).repeat_interleave(repeats)
        action, log_prob = rsample_log_prob(prob.get_dist(gather_rows(params, list(prob.in_keys), index)))
        return action, log_prob

    def _penalty_q(self, tensordict: TensorDictBase, actions: Tensor, n: int) -> Tensor:
        """Twin Q values ``[2, B * 3n, 1]`` of ``actions`` at ``s`` (2n rows each) and ``s'`` (n rows each)."""
        keys = self._tensor_keys
        next_td = self._next(tensordict)
        split = self._splits["qvalue_network"]
        if split is None or tensordict.ndim != 1:
            curr_obs, next_obs = self._obs(tensordict, n), self._obs(next_td, n)
            obs_all = cast(TensorDictBase, torch.cat([curr_obs, curr_obs, next_obs], curr_obs.ndim - 1))
            obs_all.set(keys.action, actions)
            return self._q(obs_all, "params")
        prefix, suffix = split
        b = tensordict.shape[0]
        unique = TensorDict(
            {k: torch.cat([self._get(tensordict, k), self._get(next_td, k)]) for k in prefix.in_keys}, [2 * b]
        )
        rows = torch.arange(b, device=actions.device).repeat_interleave(n)
        index = torch.cat([rows, rows, rows + b])
        needed = [k for k in suffix.in_keys if k != keys.action]

        def call(data: TensorDictBase) -> TensorDictBase:
            expanded = gather_rows(prefix(data), needed, index)
            expanded.set(keys.action, actions)
            return suffix(expanded)

        return self._vmap_call("qvalue_network", unique, keys.state_action_value, "params", call=call)

    def _cql_penalty(self, tensordict: TensorDictBase, pred: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(loss_cql per sample, cql_q1_loss, cql_q2_loss)``."""
        n = self.num_random
        action_dim = self._get(tensordict, self._tensor_keys.action).shape[-1]
        random_actions = pred.new_empty((*tensordict.shape[:-1], tensordict.shape[-1] * n, action_dim)).uniform_(-1, 1)
        with torch.no_grad():
            curr_actions, curr_log_pi = self._repeated_policy(tensordict, n)
            new_actions, new_log_pi = self._repeated_policy(self._next(tensordict), n)
        # One ensemble call over the three action sets (random, current policy, next-state policy).
        actions = torch.cat([random_actions, curr_actions, new_actions], -2)
        q_random, q_curr, q_new = self._penalty_q(tensordict, actions, n).chunk(3, dim=-2)
        random_density = math.log(0.5**action_dim)
        cat_q = torch.cat(
            [q_random - random_density, q_new - new_log_pi.unsqueeze(-1), q_curr - curr_log_pi.unsqueeze(-1)], -1
        )
        lse = torch.logsumexp(cat_q / self.temperature, dim=-1) * self.min_q_weight * self.temperature
        # The reference broadcasts [B * n] against [B, 1] before averaging: every sample's penalty
        # uses the batch mean of the logsumexp terms.
        q1_loss = lse[0].mean() - pred[0].squeeze(-1) * self.min_q_weight
        q2_loss = lse[1].mean() - pred[1].squeeze(-1) * self.min_q_weight
        return q1_loss + q2_loss, q1_loss, q2_loss

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms; writes ``td_error`` (and the twin predictions) into ``tensordict``."""
        keys = self._tensor_keys
        mask = self._mask(tensordict)
        alpha = self._alpha
        self._get(tensordict, keys.action)
        target = self._target(tensordict)
        pred = self._q(tensordict, "params")
        tensordict.set(keys.pred_q1, pred[0])
        tensordict.set(keys.pred_q2, pred[1])
        pred_flat = pred.squeeze(-1)
        loss_q = self._reduce(distance_loss(pred_flat, target.expand_as(pred_flat), self.loss_function).sum(0), mask)
        loss_cql, q1_loss, q2_loss = self._cql_penalty(tensordict, pred)
        tensordict.set(keys.cql_q1_loss, q1_loss)
        tensordict.set(keys.cql_q2_loss, q2_loss)
        out: dict[str, Tensor] = {"loss_qvalue": loss_q, "loss_cql": self._reduce(loss_cql, mask)}
        if self.with_lagrange:
            alpha_prime = self.log_alpha_prime.exp().clamp_max(1e6)
            gap = self.target_action_gap
            out["loss_alpha_prime"] = -0.5 * alpha_prime * ((q1_loss.mean() - gap) + (q2_loss.mean() - gap))
        _, log_prob, dist = self._policy(tensordict.copy())
        bc_log_prob = dist.log_prob(self._get(tensordict, keys.action))
        out["loss_actor_bc"] = self._reduce(alpha * log_prob - bc_log_prob, mask)
        # A second sample of the same distribution: the actor's forward is not repeated.
        action, log_prob = rsample_log_prob(dist)
        td_q = tensordict.select(*self.qvalue_network.in_keys, strict=False)
        td_q.set(keys.action, action)
        min_q = self._q(td_q, "detached").min(0).values.squeeze(-1)
        out["loss_actor"] = self._reduce(alpha * log_prob - min_q, mask)
        out["loss_alpha"] = self._reduce(-self.log_alpha * (log_prob.detach() + self.target_entropy), mask)
        tensordict.set(keys.priority, (pred_flat - target).pow(2).detach().max(0).values)
        if self.reduction != "none":
            out["alpha"] = alpha
            out["entropy"] = -log_prob.detach().mean()
        elif self.scalar_output_mode == "non_tensor":
            return self._finalize(tensordict, out, {"alpha": alpha, "entropy": -log_prob.detach().mean()})
        return self._finalize(tensordict, out)


class DiscreteCQLLoss(DQNLoss):
    """CQL for discrete actions: DQN regression (halved) plus ``logsumexp_a Q(s, a) - Q(s, a_data)``.

    Args:
        value_network: Q-value network writing ``"action_value"`` (and ``"chosen_action_value"``).

    Keyword Args:
        loss_function: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
        delay_value: keep a target network (default ``True``).
        gamma: removed; must be ``None``.
        action_space: ``"one-hot"``, ``"categorical"``, ... or a spec.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Examples:
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> loss = DiscreteCQLLoss(Mod(torch.nn.Linear(3, 2), ["observation"], ["action_value"]),
        ...                        action_space="one-hot")
        >>> td = TensorDict({"observation": torch.randn(5, 3),
        ...     "action": torch.nn.functional.one_hot(torch.randint(2, (5,)), 2),
        ...     ("next", "observation"): torch.randn(5, 3), ("next", "reward"): torch.randn(5, 1),
        ...     ("next", "done"): torch.zeros(5, 1, dtype=torch.bool)}, [5])
        >>> sorted(loss(td).keys())
        ['loss_cql', 'loss_qvalue', 'pred_value', 'target_value', 'td_error']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DiscreteCQLLoss`."""

        value_target: NestedKey = "value_target"
        value: NestedKey = "chosen_action_value"
        action_value: NestedKey = "action_value"
        action: NestedKey = "action"
        priority: NestedKey = "td_error"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        pred_val: NestedKey = "pred_val"

    # Its own key set (TorchRL's), not a superset of the parent's: the methods it inherits read only
    # the keys both share.
    _tensor_keys: DiscreteCQLLoss._AcceptedKeys  # type: ignore[assignment]

    def __init__(
        self,
        value_network: TensorDictModuleBase,
        *,
        loss_function: str | None = "l2",
        delay_value: bool = True,
        gamma: float | None = None,
        action_space: str | TensorSpec | None = None,
        reduction: str | None = None,
    ) -> None:
        super().__init__(
            value_network, loss_function=loss_function, delay_value=delay_value, gamma=gamma,
            action_space=action_space, reduction=reduction, use_prioritized_weights=False,
        )

    def _out_keys(self) -> list[str]:
        return ["loss_qvalue", "loss_cql", "td_error", "pred_value", "target_value"]

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms; writes ``td_error`` and ``pred_val`` into ``tensordict``."""
        keys = self._tensor_keys
        mask = self._mask(tensordict)
        action = self._get(tensordict, keys.action)
        q_all = self._get(self._call("value_network", tensordict.copy()), keys.action_value)
        pred = chosen_action_value(q_all, action, self.action_space)
        with torch.no_grad():
            next_value = self._next_value(self._next(tensordict).copy())
            target = self._bootstrap_target(tensordict, next_value).squeeze(-1)
            td_error = (pred - target).pow(2).unsqueeze(-1)
        tensordict.set(keys.priority, td_error, inplace=True)
        tensordict.set(keys.pred_val, q_all, inplace=True)
        loss_q = self._reduce(0.5 * distance_loss(pred, target, self.loss_function), mask)
        loss_cql = torch.logsumexp(q_all, dim=-1) - pred
        out = {
            "loss_qvalue": loss_q,
            "loss_cql": self._reduce(loss_cql, mask),
            "td_error": td_error.mean(0),
            "pred_value": q_all.mean().detach(),
            "target_value": target.mean(),
        }
        return self._finalize(tensordict, out)
