"""Truncated Quantile Critics (TQC) loss.

Kuznetsov et al., "Controlling Overestimation Bias with Truncated Mixture of Continuous Distributional
Quantile Critics", https://arxiv.org/abs/2005.04269. Each of the ``N`` critics outputs ``M`` return
quantiles (``"state_action_value"`` shaped ``[*batch, M]``). The target pools the ``N * M`` next-state
quantiles, drops the ``N * d`` largest (``d = top_quantiles_to_drop_per_net``: the overestimation control)
and every critic regresses its quantiles on the rest with the quantile Huber loss.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import Tensor

from tdrl.data import TensorSpec
from tdrl.objectives._ensemble_heads import policy_and_data_q
from tdrl.objectives.sac import SACLoss
from tdrl.objectives.utils import ValueEstimators

__all__ = ["TQCLoss", "quantile_huber_loss"]


def quantile_huber_loss(pred: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """Quantile Huber loss (threshold 1) of predicted quantiles ``[N, *batch, M]`` against target samples
    ``[*batch, K]``: ``(loss [N, *batch], mean |delta| [N, *batch])``, averaged over quantiles and samples.

    Quantile ``j`` of ``M`` sits at fraction ``(j + 0.5) / M``; each pair's Huber term is weighted by
    ``|tau_j - 1{delta < 0}|``.

    Examples:
        >>> loss, err = quantile_huber_loss(torch.zeros(2, 3, 4), torch.ones(3, 5))
        >>> loss.shape, float(err[0, 0])
        (torch.Size([2, 3]), 1.0)
    """
    shape = (*pred.shape, target.shape[-1])  # [N, *batch, M, K]
    # Expanded views, not materialised pairs: the fused Huber kernel, one comparison and one select touch
    # the N * B * M * K pairs (the largest tensors of the loss) a few times instead of a dozen.
    t = target.unsqueeze(0).unsqueeze(-2).expand(shape)
    p = pred.unsqueeze(-1).expand(shape)
    huber = F.huber_loss(p, t, reduction="none", delta=1.0)
    m = pred.shape[-1]
    tau = ((torch.arange(m, device=pred.device, dtype=pred.dtype) + 0.5) / m).unsqueeze(-1)
    with torch.no_grad():
        weight = torch.where(t < p, 1 - tau, tau)  # |tau - 1{target - pred < 0}|
        abs_delta = (t - p).abs().mean((-1, -2))
    return (weight * huber).mean((-1, -2)), abs_delta


class TQCLoss(SACLoss):
    """The TQC loss: ``loss_actor``, ``loss_qvalue`` (quantile Huber), ``loss_alpha``, ``alpha``, ``entropy``.

    Args:
        actor_network: stochastic policy with ``get_dist`` (reparameterisable).
        qvalue_network: quantile critic writing ``"state_action_value"`` of shape ``[*batch, num_quantiles]``
            (e.g. a ``ValueOperator`` over an ``MLP`` with ``out_features=num_quantiles``); copied
            ``num_qvalue_nets`` times.

    Keyword Args:
        num_qvalue_nets: number of critics (default 5).
        top_quantiles_to_drop_per_net: largest target quantiles dropped per critic (default 2).
        alpha_init: initial temperature (default 1.0).
        min_alpha: lower bound of alpha.
        max_alpha: upper bound of alpha.
        action_spec: action spec, for ``target_entropy="auto"``.
        fixed_alpha: keep alpha constant.
        target_entropy: ``"auto"`` (``-dim(action)``) or a float.
        delay_qvalue: target critic parameters (default ``True``).
        separate_losses: parameters shared with the actor are trained by the actor loss only.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        deactivate_vmap: accepted for API compatibility.
        skip_done_states: accepted for API compatibility (as for :class:`~tdrl.objectives.SACLoss`).
        use_prioritized_weights: ``"auto"``: weight by ``"priority_weight"`` when present.
        scalar_output_mode: with ``reduction="none"``: ``"exclude"`` or ``"non_tensor"``.

    Examples:
        >>> from tdrl.data import Unbounded
        >>> from tdrl.modules import MLP, TanhNormal, ValueOperator
        >>> from tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule as ProbMod,
        ...     ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod)
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 4), ["observation"], ["param"]),
        ...     Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ...     ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal))
        >>> critic = ValueOperator(MLP(in_features=5, out_features=7, num_cells=[8]), in_keys=["observation", "action"])
        >>> loss = TQCLoss(actor, critic, num_qvalue_nets=3, action_spec=Unbounded((2,)))
        >>> td = TensorDict({"observation": torch.randn(4, 3), "action": torch.rand(4, 2).tanh(),
        ...     ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
        ...     ("next", "done"): torch.zeros(4, 1, dtype=torch.bool),
        ...     ("next", "terminated"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
        >>> sorted(loss(td).keys())
        ['alpha', 'entropy', 'loss_actor', 'loss_alpha', 'loss_qvalue']
    """

    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0,)

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        qvalue_network: TensorDictModuleBase,
        *,
        num_qvalue_nets: int = 5,
        top_quantiles_to_drop_per_net: int = 2,
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        action_spec: TensorSpec | None = None,
        fixed_alpha: bool = False,
        target_entropy: str | float = "auto",
        delay_qvalue: bool = True,
        separate_losses: bool = False,
        reduction: str | None = None,
        deactivate_vmap: bool = False,
        skip_done_states: bool = False,
        use_prioritized_weights: str | bool = "auto",
        scalar_output_mode: str | None = None,
    ) -> None:
        if num_qvalue_nets < 1:
            raise ValueError(f"TQCLoss: num_qvalue_nets must be >= 1, got {num_qvalue_nets}")
        if top_quantiles_to_drop_per_net < 0:
            raise ValueError(
                f"TQCLoss: top_quantiles_to_drop_per_net must be >= 0, got {top_quantiles_to_drop_per_net}"
            )
        self.top_quantiles_to_drop_per_net = top_quantiles_to_drop_per_net
        super().__init__(
            actor_network, qvalue_network, num_qvalue_nets=num_qvalue_nets, loss_function="smooth_l1",
            alpha_init=alpha_init, min_alpha=min_alpha, max_alpha=max_alpha, action_spec=action_spec,
            fixed_alpha=fixed_alpha, target_entropy=target_entropy, delay_actor=False, delay_qvalue=delay_qvalue,
            separate_losses=separate_losses, reduction=reduction, deactivate_vmap=deactivate_vmap,
            skip_done_states=skip_done_states, use_prioritized_weights=use_prioritized_weights,
            scalar_output_mode=scalar_output_mode,
        )
        self.make_value_estimator(self.default_value_estimator)

    def _quantiles(self, q: Tensor, batch_ndim: int) -> Tensor:
        """``[N, *batch, M]`` critic output (a single quantile may have been squeezed away)."""
        if q.ndim == batch_ndim + 1:
            q = q.unsqueeze(-1)
        if q.ndim != batch_ndim + 2:
            raise RuntimeError(
                f"TQCLoss: the critic must write {self._tensor_keys.state_action_value!r} with one quantile "
                f"dimension after the batch dimensions, got an ensemble output of shape {tuple(q.shape)}"
            )
        return q

    def compute_target(self, tensordict: TensorDictBase) -> Tensor:
        """Truncated target quantiles ``[*batch, N * M - N * d]`` (no gradient)."""
        keys = self._tensor_keys
        with torch.no_grad():
            next_td = self._next(tensordict).copy()
            next_action, next_log_prob = self._sample_actor(next_td)
            td_q = next_td.select(*self.qvalue_network.in_keys, strict=False).set(keys.action, next_action)
            q = self._vmap_call("qvalue_network", td_q, keys.state_action_value, "target", owned=True)
            pooled = self._quantiles(q, tensordict.ndim).movedim(0, -2).flatten(-2)
            keep = pooled.shape[-1] - self.top_quantiles_to_drop_per_net * self.num_qvalue_nets
            if keep < 1:
                raise ValueError(
                    f"TQCLoss: top_quantiles_to_drop_per_net={self.top_quantiles_to_drop_per_net} must be smaller "
                    f"than the critic's number of quantiles ({pooled.shape[-1] // self.num_qvalue_nets})"
                )
            next_value = pooled.sort(-1).values[..., :keep] - self._alpha * next_log_prob.unsqueeze(-1)
            return self._bootstrap_target(self._expanded_next(tensordict, next_value.shape), next_value)

    def _expanded_next(self, tensordict: TensorDictBase, shape: torch.Size) -> TensorDict:
        """The reward and termination entries broadcast to the target quantiles' shape."""
        keys = self._tensor_keys
        entries = {}
        for key in (keys.reward, keys.terminated, keys.done):
            value = tensordict.get(("next", key), None)
            if value is not None:
                entries[key] = value.expand(shape)
        return TensorDict({"next": TensorDict(entries, batch_size=shape)}, batch_size=shape)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms and writes the TD error (``td_error``) into ``tensordict``."""
        self._get(tensordict, self._tensor_keys.action)  # a clear error before any network runs
        alpha = self._alpha
        mask = self._mask(tensordict)
        weights = self._priority_weights(tensordict)
        target = self.compute_target(tensordict)
        action, log_prob = self._sample_actor(tensordict.select(*self.actor_network.in_keys, strict=False))
        q_actor, pred = policy_and_data_q(self, tensordict, action)
        q_actor, pred = self._quantiles(q_actor, tensordict.ndim), self._quantiles(pred, tensordict.ndim)
        loss_q, td_error = quantile_huber_loss(pred, target)
        out = {
            "loss_actor": self._reduce(alpha * log_prob - q_actor.mean((0, -1)), mask, weights),
            "loss_qvalue": self._reduce(loss_q.sum(0), mask, weights),
            "loss_alpha": self._reduce(-self.log_alpha * (log_prob.detach() + self.target_entropy), mask, weights),
        }
        tensordict.set(self._tensor_keys.priority, td_error.max(0).values)
        entropy = -log_prob.detach().mean()
        if self.reduction != "none":
            out["alpha"], out["entropy"] = alpha, entropy
        elif self.scalar_output_mode == "non_tensor":
            return self._finalize(tensordict, out, {"alpha": alpha, "entropy": entropy})
        return self._finalize(tensordict, out)
