"""REDQ loss: a large Q ensemble with a random subset for the targets.

Chen et al., "Randomized Ensembled Double Q-Learning: Learning Fast Without a Model",
https://arxiv.org/abs/2101.05982. All ensemble evaluations of a forward (actor term, subsampled targets,
regression) run as one vmapped call over concatenated parameter sets.
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

from tdrl.data import TensorSpec
from tdrl.objectives._actor_critic import default_log_prob_key, rsample_log_prob
from tdrl.objectives._ensemble_heads import policy_and_data_q
from tdrl.objectives._repeat import dist_split
from tdrl.objectives._temperature import TemperatureMixin
from tdrl.objectives.common import LossModule
from tdrl.objectives.ddpg import as_next
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction, distance_loss

__all__ = ["REDQLoss"]


class REDQLoss(TemperatureMixin, LossModule["REDQLoss._AcceptedKeys"]):
    """REDQ: SAC-style losses with ``num_qvalue_nets`` critics and ``sub_sample_len`` of them in the target.

    Args:
        actor_network: stochastic policy (``get_dist_params`` / ``build_dist_from_params``).
        qvalue_network: Q(s, a) network, copied ``num_qvalue_nets`` times.

    Keyword Args:
        num_qvalue_nets: ensemble size (default 10).
        sub_sample_len: critics drawn for each target (default 2).
        loss_function: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        alpha_init: initial temperature (default 1.0).
        min_alpha: lower bound of alpha (default 0.1).
        max_alpha: upper bound of alpha (default 10.0).
        action_spec: action spec, for ``target_entropy="auto"``.
        fixed_alpha: keep alpha constant.
        target_entropy: ``"auto"`` or a float.
        delay_qvalue: target Q parameters (default ``True``).
        gSDE: accepted for API compatibility (must be ``False``).
        gamma: removed; must be ``None``.
        priority_key: deprecated; must be ``None``.
        separate_losses: parameters shared with the actor are trained by the actor loss only.
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
        >>> loss = REDQLoss(actor, Mod(Q(), ["observation", "action"], ["state_action_value"]),
        ...                 action_spec=Unbounded((2,)), num_qvalue_nets=4)
        >>> td = TensorDict({"observation": torch.randn(4, 3), "action": torch.rand(4, 2) - 0.5,
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(k for k in loss(td).keys() if k.startswith("loss"))
        ['loss_actor', 'loss_alpha', 'loss_qvalue']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`REDQLoss`."""

        action: NestedKey = "action"
        value: NestedKey = "state_value"
        sample_log_prob: NestedKey | None = None
        priority: NestedKey = "td_error"
        state_action_value: NestedKey = "state_action_value"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"

        def __post_init__(self) -> None:
            if self.sample_log_prob is None:
                self.sample_log_prob = default_log_prob_key()

    default_value_estimator = ValueEstimators.TD0
    delay_actor: bool = False
    _target_entropy_name = "target_entropy_buffer"
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
    _value_estimator_keys = ("value", "reward", "done", "terminated")

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
        gSDE: bool = False,
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
        if gSDE:
            raise ValueError("REDQLoss: gSDE exploration is not supported by tdrl")
        self.gSDE = gSDE
        self.deactivate_vmap = deactivate_vmap
        self.delay_qvalue = delay_qvalue
        self.num_qvalue_nets = num_qvalue_nets
        self.sub_sample_len = max(1, min(sub_sample_len, num_qvalue_nets - 1))
        self.loss_function = check_loss_function(loss_function)
        self.reduction = check_reduction(reduction)
        self._set_scalar_output_mode(scalar_output_mode, "alpha, entropy")
        self.convert_to_functional(actor_network, "actor_network")
        shared = list(actor_network.parameters()) if separate_losses else None
        self.convert_to_functional(
            qvalue_network, "qvalue_network", num_qvalue_nets, create_target_params=delay_qvalue, compare_against=shared
        )
        self._register_split("qvalue_network")
        self.__dict__["_actor_split"] = dist_split(actor_network)
        device = self._default_device()
        self._init_temperature(
            alpha_init=alpha_init, min_alpha=None, max_alpha=None, fixed_alpha=fixed_alpha,
            target_entropy=target_entropy, action_spec=action_spec, actor_network=actor_network,
            action_key=self._tensor_keys.action, device=device,
        )
        # REDQ clamps through buffers (TorchRL's names), without touching log_alpha in place.
        del self.min_log_alpha, self.max_log_alpha
        self.register_buffer("min_log_alpha", torch.tensor(math.log(min_alpha), device=device))
        self.register_buffer("max_log_alpha", torch.tensor(math.log(max_alpha), device=device))

    @property
    def alpha(self) -> Tensor:
        """The clamped temperature."""
        with torch.no_grad():
            return self.log_alpha.clamp(self.min_log_alpha, self.max_log_alpha).exp()

    @property
    def _alpha(self) -> Tensor:
        return self.alpha

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict:
        return {"value_network": None}

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        return [
            k.action, k.sample_log_prob, ("next", k.reward), ("next", k.done), ("next", k.terminated),
            *self.actor_network.in_keys, *[as_next(x) for x in self.actor_network.in_keys],
            *self.qvalue_network.in_keys,
        ]

    def _out_keys(self) -> list[str]:
        return [
            "loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy", "state_action_value_actor",
            "action_log_prob_actor", "next.state_value", "target_value",
        ]

    def _sample_pair(self, tensordict: TensorDictBase) -> tuple[Tensor, Tensor]:
        """Actions and log-probs at ``s`` (trainable policy) and ``s'`` (detached), drawn in one call."""
        obs_keys = self.actor_network.in_keys
        obs = tensordict.select(*obs_keys, strict=False)
        next_obs = self._next(tensordict).select(*obs_keys, strict=False)
        split = self._actor_split
        det = self.actor_network.get_dist_params if split is None else split[0]
        with self._swap("actor_network", "params"):
            params_now = det(obs.copy())
        with self._swap("actor_network", "detached"):
            params_next = det(next_obs.copy())
        params = torch.stack([params_now, params_next], 0)
        if split is None:
            return rsample_log_prob(self.actor_network.build_dist_from_params(params))
        return rsample_log_prob(split[1].get_dist(params))

    def _safe_log_alpha(self) -> Tensor:
        with torch.no_grad():
            clamped = self.log_alpha.clamp(self.min_log_alpha, self.max_log_alpha)
        return self.log_alpha - self.log_alpha.detach() + clamped

    def _q_values(self, tensordict: TensorDictBase, sample: Tensor, action: Tensor, idx: Tensor):
        """``(Q(s, a~pi) detached [n], target Q(s', a'~pi) for members idx [k], Q(s, a) [n])``, each
        ``[members, *batch]``."""
        keys = self._tensor_keys
        n, k = self.num_qvalue_nets, idx.shape[0]
        q_in = tensordict.select(*self.qvalue_network.in_keys, strict=False)
        next_in = self._next(tensordict).select(*self.qvalue_network.in_keys, strict=False)
        split = self._splits["qvalue_network"]
        if split is not None:
            # The state trunk runs once per member for the actor's and the stored actions.
            q_actor, q_pred = policy_and_data_q(self, tensordict, sample[0])
            next_td = next_in.clone(False).set(keys.action, sample[1])
            q_next = self._vmap_call(
                "qvalue_network", next_td, keys.state_action_value, params=self.target_qvalue_network_params[idx]
            )
            return q_actor, q_next.squeeze(-1), q_pred
        # One call over the three parameter sets (detached, sub-sampled targets, trainable).
        actor_td = q_in.clone(False).set(keys.action, sample[0]).expand(n, *q_in.shape)
        next_td = next_in.clone(False).set(keys.action, sample[1]).expand(k, *q_in.shape)
        data_td = q_in.clone(False).set(keys.action, action).expand(n, *q_in.shape)
        params = [self.qvalue_network_params.detach(), self.target_qvalue_network_params[idx], self.qvalue_network_params]
        all_params = cast(TensorDictBase, torch.cat(params, 0))
        batch = cast(TensorDictBase, torch.cat([actor_td, next_td, data_td], 0))
        q = self._vmap_call("qvalue_network", batch, keys.state_action_value, td_dim=0, params=all_params).squeeze(-1)
        return q.split([n, k, n], 0)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms and writes ``td_error`` into ``tensordict``."""
        keys = self._tensor_keys
        n, k = self.num_qvalue_nets, self.sub_sample_len
        idx = torch.randperm(n)[:k].sort().values
        sample, log_prob = self._sample_pair(tensordict)
        action = self._get(tensordict, keys.action)
        q_actor, q_next, q_pred = self._q_values(tensordict, sample, action, idx)
        alpha = self.alpha
        log_prob_actor, log_prob_next = log_prob.unbind(0)
        loss_actor = -(q_actor - alpha * log_prob_actor)
        next_value = (q_next - alpha * log_prob_next).min(0).values
        with torch.no_grad():
            target = self._bootstrap_target(tensordict, next_value.detach().unsqueeze(-1)).squeeze(-1)
        loss_q = distance_loss(q_pred, target.expand_as(q_pred), self.loss_function)
        tensordict.set(keys.priority, (q_pred - target).pow(2).detach().max(0).values)
        loss_alpha = -self._safe_log_alpha().exp() * (log_prob.detach() + self.target_entropy)
        mask = self._mask(tensordict)
        out = {
            "loss_actor": self._reduce(loss_actor, mask),
            "loss_qvalue": self._reduce(loss_q, mask),
            "loss_alpha": self._reduce(loss_alpha, mask),
        }
        non_tensor = None
        if self.reduction != "none":
            out["alpha"] = alpha
            out["entropy"] = -log_prob.detach().mean()
        elif self.scalar_output_mode == "non_tensor":
            non_tensor = {"alpha": alpha, "entropy": -log_prob.detach().mean()}
        out["state_action_value_actor"] = q_actor.detach()
        out["action_log_prob_actor"] = log_prob_actor.detach()
        out["next.state_value"] = next_value.detach()
        out["target_value"] = target
        return self._finalize(tensordict, out, non_tensor)
