"""PPO with an adaptive KL penalty (:class:`KLPENPPOLoss`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import ProbabilisticTensorDictModule, TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor
from torch import distributions as d

from tdrl.modules.distributions import TanhNormal, same_squashing
from tdrl.objectives._actor_critic import (
    _sum_leaves,
)
from tdrl.objectives._advantage_norm import (
    AdvantageNorm,
)
from tdrl.objectives._ppo import PPOLoss

__all__ = ["KLPENPPOLoss"]


def _dist_param_keys(actor: torch.nn.Module) -> list:
    """The input keys of the actor's distribution module (e.g. ``["loc", "scale"]``)."""
    for module in actor.modules():
        if isinstance(module, ProbabilisticTensorDictModule):
            return list(module.in_keys)
    return []


class KLPENPPOLoss(PPOLoss):
    """PPO with an adaptive KL penalty: ``-(r * A - beta * KL(pi_old || pi))``.

    ``beta`` is multiplied by ``increment`` when the batch KL exceeds ``1.5 * dtarg`` and by
    ``decrement`` when it falls under ``dtarg / 1.5`` (the update is tensor arithmetic, no host sync).
    The old distribution is rebuilt from its stored parameters (e.g. ``"loc"``/``"scale"``).

    Args:
        actor_network: probabilistic policy.
        critic_network: state-value network.

    Keyword Args:
        dtarg: target KL (default 0.01).
        beta: initial penalty (default 1.0).
        increment: factor when the KL is too large (>= 1, default 2).
        decrement: factor when the KL is too small (<= 1, default 0.5).
        samples_mc_kl: MC samples when the KL has no closed form (default 1).
        **kwargs: the other arguments of :class:`PPOLoss` (same meaning and defaults).

    Examples:
        >>> from tdrl.modules import IndependentNormal
        >>> from tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule as ProbMod,
        ...     ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod)
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 4), ["observation"], ["param"]),
        ...     Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ...     ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=IndependentNormal))
        >>> loss = KLPENPPOLoss(actor, Mod(torch.nn.Linear(3, 1), ["observation"], ["state_value"]))
        >>> loss.set_keys(sample_log_prob="action_log_prob")
        KLPENPPOLoss()
        >>> td = TensorDict({"observation": torch.randn(6, 3), "action": torch.randn(6, 2),
        ...     "action_log_prob": torch.randn(6), "advantage": torch.randn(6, 1),
        ...     "value_target": torch.randn(6, 1), "loc": torch.zeros(6, 2), "scale": torch.ones(6, 2)}, [6])
        >>> loss(td)["kl"].shape
        torch.Size([6, 1])
    """

    def __init__(
        self,
        actor_network: TensorDictModuleBase | None = None,
        critic_network: TensorDictModuleBase | None = None,
        *,
        dtarg: float = 0.01,
        beta: float = 1.0,
        increment: float = 2,
        decrement: float = 0.5,
        samples_mc_kl: int = 1,
        entropy_bonus: bool = True,
        samples_mc_entropy: int = 1,
        entropy_coeff: float | Mapping[NestedKey, float] | None = None,
        critic_coeff: float | None = None,
        loss_critic_type: str = "smooth_l1",
        normalize_advantage: bool = False,
        normalize_advantage_exclude_dims: tuple[int, ...] = (),
        advantage_norm: AdvantageNorm | None = None,
        gamma: float | None = None,
        separate_losses: bool = False,
        reduction: str | None = None,
        clip_value: float | None = None,
        delay_actor: bool = False,
        max_importance_ratio: float | None = None,
        device: torch.device | None = None,
        **kwargs,
    ) -> None:
        super().__init__(
            actor_network,
            critic_network,
            entropy_bonus=entropy_bonus,
            samples_mc_entropy=samples_mc_entropy,
            entropy_coeff=entropy_coeff,
            critic_coeff=critic_coeff,
            loss_critic_type=loss_critic_type,
            normalize_advantage=normalize_advantage,
            normalize_advantage_exclude_dims=normalize_advantage_exclude_dims,
            advantage_norm=advantage_norm,
            gamma=gamma,
            separate_losses=separate_losses,
            reduction=reduction,
            clip_value=clip_value,
            delay_actor=delay_actor,
            max_importance_ratio=max_importance_ratio,
            device=device,
            **kwargs,
        )
        if self._token_data:
            raise ValueError("KLPENPPOLoss has no token-data path; use ClipPPOLoss or GRPOLoss with an LLM policy.")
        if increment < 1.0:
            raise ValueError(f"increment should be >= 1.0 in KLPENPPOLoss, got {increment:4.4f}")
        if decrement > 1.0:
            raise ValueError(f"decrement should be <= 1.0 in KLPENPPOLoss, got {decrement:4.4f}")
        self.dtarg = dtarg
        self._beta_init = beta
        self.register_buffer("beta", torch.tensor(float(beta), device=self.entropy_coeff.device))
        self.increment = increment
        self.decrement = decrement
        self.samples_mc_kl = samples_mc_kl

    def _out_keys(self) -> list[str]:
        keys = super()._out_keys()
        keys.insert(1, "kl")
        return keys

    def _old_dist(self, tensordict: TensorDictBase) -> d.Distribution:
        if self.delay_actor:
            with torch.no_grad():
                return self._actor_dist(tensordict.copy(), "target")
        build = getattr(self.actor_network, "build_dist_from_params", None)
        if build is None:
            raise TypeError("KLPENPPOLoss: the actor cannot rebuild a distribution from stored parameters")
        params = _dist_param_keys(self.actor_network)
        missing = [k for k in params if tensordict.get(k, None) is None]
        if missing:
            raise KeyError(
                f"KLPENPPOLoss: the parameters of the old distribution {missing} are missing from the input "
                f"(collect with the actor so it writes {params}, or use delay_actor=True); the input holds "
                f"{sorted(map(str, tensordict.keys(True, True)))}"
            )
        try:
            return build(tensordict)
        except KeyError as err:
            raise KeyError(
                f"KLPENPPOLoss: the parameters of the old distribution were not found in the input ({err}); "
                f"the input holds {sorted(map(str, tensordict.keys(True, True)))}"
            ) from err

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms and adapts ``beta``."""
        td = tensordict.copy()
        previous = self._old_dist(tensordict)
        advantage = self._prepared_advantage(td)
        batch_ndim = advantage.ndim - 1
        log_weight, dist, kl_approx, log_is_weight = self._log_weight(td, batch_ndim)
        out: dict[str, Tensor] = {}
        self._objective(log_weight, advantage, log_is_weight, out)
        try:
            # Closed form where one exists; two TanhNormal with the same bounds: that of their normals.
            if same_squashing(previous, dist):
                kl = d.kl_divergence(cast(TanhNormal, previous).base_dist, cast(TanhNormal, dist).base_dist)
            else:
                kl = d.kl_divergence(previous, dist)
        except NotImplementedError:
            # Score the draw on its exact pre-image when the distribution can (tanh-squashed ones), as
            # TorchRL does: inverting a saturated tanh sample would distort the estimate.
            exact = getattr(previous, "sample_and_log_prob", None)
            if exact is not None:
                x, previous_log_prob = exact((self.samples_mc_kl,))
            else:
                x = previous.sample((self.samples_mc_kl,))
                previous_log_prob = previous.log_prob(x)
            kl = (previous_log_prob - dist.log_prob(x)).mean(0)
        kl = _sum_leaves(kl, batch_ndim).unsqueeze(-1)
        # A copy: the in-place beta update below must not touch a tensor saved for backward.
        out["loss_objective"] = out["loss_objective"] + self.beta.clone() * kl
        with torch.no_grad():
            mean_kl = kl.mean()
            factor = torch.where(
                mean_kl > self.dtarg * 1.5,
                torch.tensor(self.increment, dtype=self.beta.dtype),
                torch.where(mean_kl < self.dtarg / 1.5, torch.tensor(self.decrement, dtype=self.beta.dtype), 1.0),
            )
            self.beta.mul_(factor)
        out["kl"] = kl.detach()
        out["kl_approx"] = kl_approx.detach().mean()
        if self.entropy_bonus:
            self._entropy_terms(dist, out, batch_ndim)
        if self._has_critic:
            self._critic_terms(td, out)
        return self._finish(td, out)

    def reset(self) -> None:
        """Restores the initial ``beta``."""
        self.beta.fill_(self._beta_init)
