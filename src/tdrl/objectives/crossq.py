"""CrossQ: SAC without target networks, with batch-normalised critics.

Bhatt et al., "CrossQ: Batch Normalization in Deep Reinforcement Learning for Greater Sample Efficiency
and Simplicity", https://openreview.net/pdf?id=PczQtTsTIX. The critic sees the current and the next
state-action pairs as *one* batch, so its normalisation layers (``BatchRenorm1d``) normalise both with the
same statistics; that joint batch replaces the target network. The actor loss reads the critic in
evaluation mode (running statistics), so it neither moves them nor depends on the batch.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor, nn

from tdrl.data import TensorSpec
from tdrl.objectives._actor_critic import rsample_log_prob
from tdrl.objectives._repeat import dist_split
from tdrl.objectives._temperature import TemperatureMixin
from tdrl.objectives.common import LossModule
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction, distance_loss

__all__ = ["CrossQLoss", "sample_log_prob"]


def sample_log_prob(dist: torch.distributions.Distribution) -> tuple[Tensor, Tensor]:
    """A (non-reparameterised) sample and its log-probability, scored on the exact pre-image when the
    distribution offers ``sample_and_log_prob`` (tanh-squashed ones do).

    Examples:
        >>> a, lp = sample_log_prob(torch.distributions.Normal(torch.zeros(2), torch.ones(2)))
        >>> a.shape, lp.shape
        (torch.Size([2]), torch.Size([2]))
    """
    fused = getattr(dist, "sample_and_log_prob", None)
    if fused is not None:
        return fused()
    sample = dist.sample()
    return sample, dist.log_prob(sample)


@contextlib.contextmanager
def eval_mode(module: nn.Module) -> Iterator[None]:
    """``module`` in evaluation mode for the block, its previous mode restored after."""
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was_training)


class CrossQLoss(TemperatureMixin, LossModule["CrossQLoss._AcceptedKeys"]):
    """The CrossQ loss: ``loss_actor``, ``loss_qvalue``, ``loss_alpha`` (+ ``alpha``, ``entropy`` and the
    per-sample ``log_prob`` and ``td_error``, as TorchRL reports them).

    Args:
        actor_network: stochastic policy with ``get_dist`` (reparameterisable).
        qvalue_network: Q(s, a) network writing ``"state_action_value"``, usually with ``BatchRenorm1d``
            layers; copied ``num_qvalue_nets`` times.

    Keyword Args:
        num_qvalue_nets: size of the Q ensemble (default 2).
        loss_function: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        alpha_init: initial temperature (default 1.0).
        min_alpha: lower bound of alpha.
        max_alpha: upper bound of alpha.
        action_spec: action spec, for ``target_entropy="auto"``.
        fixed_alpha: keep alpha constant (a buffer) instead of learning it.
        target_entropy: ``"auto"`` (``-dim(action)``) or a float.
        priority_key: deprecated; must be ``None``.
        separate_losses: parameters shared with the actor are trained by the actor loss only.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        deactivate_vmap: accepted for API compatibility (eager code loops over the members anyway).
        scalar_output_mode: with ``reduction="none"``: ``"exclude"`` or ``"non_tensor"`` for ``alpha``
            and ``entropy`` (``None`` excludes them with a warning).

    Examples:
        >>> from tdrl.data import Unbounded
        >>> from tdrl.modules import BatchRenorm1d, TanhNormal
        >>> from tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule as ProbMod,
        ...     ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod)
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 4), ["observation"], ["param"]),
        ...     Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ...     ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal))
        >>> class Q(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.net = torch.nn.Sequential(BatchRenorm1d(5), torch.nn.Linear(5, 1))
        ...     def forward(self, obs, act):
        ...         return self.net(torch.cat([obs, act], -1))
        >>> loss = CrossQLoss(actor, Mod(Q(), ["observation", "action"], ["state_action_value"]),
        ...     action_spec=Unbounded((2,)))
        >>> td = TensorDict({"observation": torch.randn(4, 3), "action": torch.rand(4, 2).tanh(),
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool),
        ...     ("next", "terminated"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(loss(td).keys())
        ['alpha', 'entropy', 'log_prob', 'loss_actor', 'loss_alpha', 'loss_qvalue', 'td_error']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`CrossQLoss`."""

        action: NestedKey = "action"
        state_action_value: NestedKey = "state_action_value"
        priority: NestedKey = "td_error"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        log_prob: NestedKey = "_log_prob"

    default_value_estimator = ValueEstimators.TD0
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
    _value_estimator_keys = ("reward", "done", "terminated")

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        qvalue_network: TensorDictModuleBase,
        *,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        action_spec: TensorSpec | None = None,
        fixed_alpha: bool = False,
        target_entropy: str | float = "auto",
        priority_key: str | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
        scalar_output_mode: str | None = None,
    ) -> None:
        super().__init__()
        if priority_key is not None:
            raise TypeError("priority_key is deprecated; use loss.set_keys(priority=...)")
        if num_qvalue_nets < 1:
            raise ValueError(f"CrossQLoss: num_qvalue_nets must be >= 1, got {num_qvalue_nets}")
        self.reduction = check_reduction(reduction)
        self._set_scalar_output_mode(scalar_output_mode, "alpha, entropy")
        self.loss_function = check_loss_function(loss_function)
        self.deactivate_vmap = deactivate_vmap
        self.num_qvalue_nets = num_qvalue_nets
        self.convert_to_functional(actor_network, "actor_network")
        shared = list(actor_network.parameters()) if separate_losses else None
        self.convert_to_functional(qvalue_network, "qvalue_network", num_qvalue_nets, compare_against=shared)
        self.__dict__["_actor_split"] = dist_split(actor_network)
        self._init_temperature(
            alpha_init=alpha_init, min_alpha=min_alpha, max_alpha=max_alpha, fixed_alpha=fixed_alpha,
            target_entropy=target_entropy, action_spec=action_spec, actor_network=actor_network,
            action_key=self._tensor_keys.action, device=self._default_device(),
        )
        # Built now: torch.compile(loss) may trace the first call, where building a module breaks the graph.
        self.make_value_estimator(self.default_value_estimator)

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict:
        return {"value_network": None}

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        keys = [k.action, ("next", k.reward), ("next", k.done), ("next", k.terminated)]
        keys += list(self.actor_network.in_keys)
        keys += [("next", *((x,) if isinstance(x, str) else x)) for x in self.actor_network.in_keys]
        return keys + list(self.qvalue_network.in_keys)

    def _out_keys(self) -> list[str]:
        return ["loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"]

    def qvalue_loss(self, tensordict: TensorDictBase) -> tuple[Tensor, dict[str, Tensor]]:
        """Q loss on the joint (current, next) batch; returns ``(loss, {"td_error": ...})``."""
        keys = self._tensor_keys
        with torch.no_grad():
            next_td = self._next(tensordict).copy()
            next_action, next_log_prob = sample_log_prob(self._actor_dist(next_td))
        in_keys = self.qvalue_network.in_keys
        current = tensordict.select(*in_keys, strict=False)
        nxt = next_td.select(*in_keys, strict=False)
        nxt.set(keys.action, next_action)
        # One batch: the normalisation layers see both halves with the same statistics (the point of CrossQ).
        joint = cast(TensorDictBase, torch.cat([current, nxt], 0))
        q = self._vmap_call("qvalue_network", joint, keys.state_action_value, owned=True)
        pred, next_q = q.split(tensordict.shape[0], dim=1)
        if next_q.shape[-next_log_prob.ndim:] != next_log_prob.shape:
            next_log_prob = next_log_prob.unsqueeze(-1)
        next_value = (next_q.min(0).values - self._alpha * next_log_prob).detach()
        target = self._bootstrap_target(tensordict, next_value).squeeze(-1)
        pred = pred.squeeze(-1)
        loss = distance_loss(pred, target.expand_as(pred), self.loss_function).sum(0)
        td_error = (pred - target).abs().detach().max(0).values
        return self._reduce(loss, self._mask(tensordict)), {"td_error": td_error}

    def actor_loss(self, tensordict: TensorDictBase) -> tuple[Tensor, dict[str, Tensor]]:
        """``alpha * log pi(a|s) - min_i Q_i(s, a)`` with the critic in evaluation mode (running statistics)."""
        keys = self._tensor_keys
        td = tensordict.copy()
        action, log_prob = rsample_log_prob(self._actor_dist(td))
        td_q = td.select(*self.qvalue_network.in_keys, strict=False)
        td_q.set(keys.action, action)
        with eval_mode(self.qvalue_network):
            q = self._vmap_call("qvalue_network", td_q, keys.state_action_value, "detached", owned=True)
        min_q = q.min(0).values.squeeze(-1)
        if log_prob.shape != min_q.shape:
            raise RuntimeError(f"CrossQLoss: log-prob shape {tuple(log_prob.shape)} != Q shape {tuple(min_q.shape)}")
        loss = self._reduce(self._alpha * log_prob - min_q, self._mask(tensordict))
        return loss, {"log_prob": log_prob.detach()}

    def alpha_loss(self, log_prob: Tensor, tensordict: TensorDictBase | None = None) -> Tensor:
        """Temperature loss ``-log_alpha * (log_prob + target_entropy)``."""
        mask = self._mask(tensordict) if tensordict is not None else None
        return self._reduce(-self.log_alpha * (log_prob + self.target_entropy), mask)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms and writes the TD error (``td_error``) into ``tensordict``."""
        self._get(tensordict, self._tensor_keys.action)  # a clear error before any network runs
        loss_qvalue, value_meta = self.qvalue_loss(tensordict)
        loss_actor, actor_meta = self.actor_loss(tensordict)
        log_prob = actor_meta["log_prob"]
        tensordict.set(self._tensor_keys.priority, value_meta["td_error"])
        out = {"loss_actor": loss_actor, "loss_qvalue": loss_qvalue,
               "loss_alpha": self.alpha_loss(log_prob, tensordict), **actor_meta, **value_meta}
        entropy = -log_prob.mean()
        if self.reduction != "none":
            out["alpha"], out["entropy"] = self._alpha, entropy
            return self._finalize(tensordict, out)
        result = TensorDict(out, batch_size=tensordict.batch_size)
        if self.scalar_output_mode == "non_tensor":
            result.set_non_tensor("alpha", self._alpha)
            result.set_non_tensor("entropy", entropy)
        return result
