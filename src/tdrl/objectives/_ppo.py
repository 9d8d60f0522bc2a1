"""The PPO losses with a clipped or plain objective (:class:`PPOLoss`, :class:`ClipPPOLoss`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import CompositeDistribution, TensorDictModuleBase, composite_lp_aggregate
from tensordict.utils import NestedKey
from torch import Tensor
from torch import distributions as d

from tdrl.objectives._actor_critic import (
    ActorCriticLossBase,
    _sum_leaves,
    default_log_prob_key,
    entropy_of,
    head_entropies,
)
from tdrl.objectives._advantage_norm import (
    AdvantageNorm,
    check_advantage_norm,
    masked_standardize,
    scale_advantage,
)
from tdrl.objectives._ppo_tokens import TOKEN_KEYS, is_token_policy, token_ppo_forward
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction

__all__ = ["ClipPPOLoss", "PPOLoss"]


def _check_options(*, gamma: float | None, functional: bool, delay_actor: bool, advantage_norm: AdvantageNorm | None,
                   normalize_advantage: bool, max_importance_ratio: float | None) -> None:
    """Refuses PPO constructor options that tdrl does not take or that contradict each other."""
    if gamma is not None:
        raise TypeError("gamma is no longer a loss argument; use loss.make_value_estimator(gamma=...)")
    if not functional and delay_actor:
        raise ValueError("delay_actor=True needs functional=True: the proximal policy lives in "
                         "target_actor_network_params.")
    if advantage_norm is not None and normalize_advantage:
        raise ValueError(
            "normalize_advantage=True and advantage_norm are mutually exclusive: pass either the "
            "mean/std standardisation flag or a running normaliser, not both."
        )
    check_advantage_norm(advantage_norm)
    if max_importance_ratio is not None and max_importance_ratio <= 0:
        raise ValueError(f"max_importance_ratio must be > 0, got {max_importance_ratio}.")


class PPOLoss(ActorCriticLossBase["PPOLoss._AcceptedKeys"]):
    """Importance-weighted policy-gradient loss, the base of the PPO family.

    ``loss_objective = -exp(log_pi(a|s) - log_pi_old(a|s)) * advantage``, plus an entropy bonus and a
    critic loss. The advantage is read from the input (computed with the value estimator when missing).

    Args:
        actor_network: probabilistic policy (``get_dist``).
        critic_network: state-value network writing ``"state_value"``.

    Keyword Args:
        entropy_bonus: add ``loss_entropy = -entropy_coeff * entropy`` (default ``True``).
        samples_mc_entropy: MC samples when the entropy has no closed form (default 1).
        entropy_coeff: entropy multiplier (default 0.01); a mapping gives one coefficient per action head.
        log_explained_variance: also report ``explained_variance`` (default ``True``).
        critic_coeff: critic-loss multiplier (default 1.0; ``None`` drops the critic loss).
        loss_critic_type: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        normalize_advantage: standardise the advantage over the batch (default ``False``).
        normalize_advantage_exclude_dims: dimensions kept out of the standardisation.
        advantage_norm: a running value normaliser (an object with ``update(value_target)`` and
            ``scale()``, such as TorchRL's ``ValueNorm``): the advantage is divided by ``scale()`` without
            re-centring. When the loss computes the advantage itself (no ``"advantage"`` entry) and is in
            training mode, it first calls ``update`` with the valid rows of the value target. Mutually
            exclusive with ``normalize_advantage``.
        gamma: removed; must be ``None``.
        separate_losses: shared parameters are trained by the actor loss only.
        advantage_key, value_target_key, value_key: removed; must be ``None`` (use :meth:`set_keys`).
        functional: ``False`` is accepted as in TorchRL (the networks run with their own parameters either
            way; ``loss.functional`` reports the flag); it cannot be combined with ``delay_actor``.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        clip_value: clip the value prediction around the stored value (``float``) before the critic loss.
        delay_actor: keep target actor parameters used as the proximal policy.
        max_importance_ratio: cap on the behaviour ratio ``pi / pi_behav``: the (gradient-free) behaviour
            log-weight is lowered so that a capped sample keeps a rescaled gradient instead of none.
        device: device of the coefficient buffers.

    Examples:
        >>> from tdrl.modules import IndependentNormal
        >>> from tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule as ProbMod,
        ...     ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod)
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 4), ["observation"], ["param"]),
        ...     Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ...     ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=IndependentNormal))
        >>> critic = Mod(torch.nn.Linear(3, 1), ["observation"], ["state_value"])
        >>> loss = PPOLoss(actor, critic)
        >>> td = TensorDict({"observation": torch.randn(6, 3), "action": torch.randn(6, 2),
        ...     "action_log_prob": torch.randn(6), "advantage": torch.randn(6, 1),
        ...     "value_target": torch.randn(6, 1)}, [6])
        >>> loss.set_keys(sample_log_prob="action_log_prob")
        PPOLoss()
        >>> sorted(loss(td).keys())
        ['entropy', 'explained_variance', 'kl_approx', 'loss_critic', 'loss_entropy', 'loss_objective']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of the PPO losses."""

        advantage: NestedKey = "advantage"
        value_target: NestedKey = "value_target"
        value: NestedKey = "state_value"
        sample_log_prob: NestedKey | list[NestedKey] | None = None
        action: NestedKey | list[NestedKey] = "action"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"

        def __post_init__(self) -> None:
            if self.sample_log_prob is None:
                self.sample_log_prob = default_log_prob_key()

    default_value_estimator = ValueEstimators.GAE
    SUPPORTED_VALUE_ESTIMATORS = tuple(ValueEstimators)
    _value_estimator_keys = (
        "advantage", "value_target", "value", "reward", "done", "terminated", "sample_log_prob",
    )

    def __init__(
        self,
        actor_network: TensorDictModuleBase | None = None,
        critic_network: TensorDictModuleBase | None = None,
        *,
        entropy_bonus: bool = True,
        samples_mc_entropy: int = 1,
        entropy_coeff: float | Mapping[NestedKey, float] | None = None,
        log_explained_variance: bool = True,
        critic_coeff: float | None = None,
        loss_critic_type: str = "smooth_l1",
        normalize_advantage: bool = False,
        normalize_advantage_exclude_dims: tuple[int, ...] = (),
        advantage_norm: AdvantageNorm | None = None,
        gamma: float | None = None,
        separate_losses: bool = False,
        advantage_key: str | None = None,
        value_target_key: str | None = None,
        value_key: str | None = None,
        functional: bool = True,
        actor: TensorDictModuleBase | None = None,
        critic: TensorDictModuleBase | None = None,
        reduction: str | None = None,
        clip_value: float | None = None,
        delay_actor: bool = False,
        max_importance_ratio: float | None = None,
        device: torch.device | None = None,
        **kwargs,
    ) -> None:
        self._check_no_extra_kwargs(str(type(self).__name__), kwargs)
        actor_network = actor if actor is not None else actor_network
        critic_network = critic if critic is not None else critic_network
        if critic_coeff is None and critic_network is not None:
            critic_coeff = 1.0
        if actor_network is None or (critic_network is None and critic_coeff not in (None, 0.0)):
            raise TypeError("Missing positional arguments actor_network or critic_network.")
        _check_options(gamma=gamma, functional=functional, delay_actor=delay_actor, advantage_norm=advantage_norm,
                       normalize_advantage=normalize_advantage, max_importance_ratio=max_importance_ratio)
        # An LLM policy (token data, see _ppo_tokens.py) is decided once here: the usual path never checks.
        self._token_data = is_token_policy(actor_network)
        if self._token_data and (critic_network is not None or delay_actor or max_importance_ratio is not None
                                 or advantage_norm is not None):
            raise ValueError(
                f"{type(self).__name__} on an LLM policy (token data) takes no critic_network, delay_actor, "
                "max_importance_ratio or advantage_norm: pass the advantage in the batch (e.g. from MCAdvantage)."
            )
        super().__init__()
        self._functional = functional
        self._set_deprecated_ctor_keys(advantage=advantage_key, value_target=value_target_key, value=value_key)
        self._setup_networks(actor_network, critic_network, separate_losses=separate_losses, delay_actor=delay_actor)
        self.advantage_norm = advantage_norm
        self.delay_actor = delay_actor
        self.entropy_bonus = entropy_bonus
        self.samples_mc_entropy = samples_mc_entropy
        self.log_explained_variance = log_explained_variance
        self.loss_critic_type = check_loss_function(loss_critic_type)
        self.normalize_advantage = normalize_advantage
        self.normalize_advantage_exclude_dims = tuple(normalize_advantage_exclude_dims)
        self.reduction = check_reduction(reduction)
        if device is None:
            device = self._default_device()
        if entropy_coeff is None:
            entropy_coeff = 0.01
        self._entropy_coeff_map = None
        if isinstance(entropy_coeff, Mapping):
            self._entropy_coeff_map = {k: float(v) for k, v in entropy_coeff.items()}
            entropy_coeff = 0.0
        self.register_buffer("entropy_coeff", torch.tensor(float(entropy_coeff), device=device))
        self._has_critic = critic_network is not None and critic_coeff not in (None, 0, 0.0)
        self._optional_buffer("critic_coeff", critic_coeff if self._has_critic else None, device)
        self._optional_buffer("clip_value", clip_value, device)
        self._optional_buffer("max_importance_ratio", max_importance_ratio, device)
        if self._token_data:
            self.set_keys(**TOKEN_KEYS)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def _out_keys(self) -> list[str]:
        keys = ["loss_objective"]
        if self.entropy_bonus:
            keys += ["entropy", "loss_entropy"]
        if self._has_critic:
            keys.append("loss_critic")
        if self.clip_value is not None:
            keys.append("value_clip_fraction")
        return keys

    # ------------------------------------------------------------------ parts
    def _prepared_advantage(self, td: TensorDictBase) -> Tensor:
        """The advantage (computed when missing), scaled by ``advantage_norm`` or standardised."""
        if self.advantage_norm is None:
            return self._normalized_advantage(self._advantage(td), td)
        computed = td.get(self._tensor_keys.advantage, None) is None
        advantage = self._advantage(td)
        return scale_advantage(self, advantage, td, update=computed and self.training)

    def _normalized_advantage(self, advantage: Tensor, td: TensorDictBase) -> Tensor:
        if not self.normalize_advantage or advantage.numel() <= 1:
            return advantage
        exclude = {x % advantage.ndim for x in self.normalize_advantage_exclude_dims}
        dims = [i for i in range(advantage.ndim) if i not in exclude]
        valid = td.get("shifted_valid", None)
        if valid is not None:
            return masked_standardize(advantage, valid, dims)
        loc = advantage.mean(dims, keepdim=True)
        scale = advantage.std(dims, keepdim=True).clamp_min(1e-6)
        return (advantage - loc) / scale

    def _prev_log_prob(self, td: TensorDictBase, batch_ndim: int) -> Tensor:
        key = self._tensor_keys.sample_log_prob
        if isinstance(key, list):
            return _sum_leaves(td.select(*key), batch_ndim)
        prev = self._get(td, cast(NestedKey, key))  # set by the keys' __post_init__
        if prev.requires_grad:
            raise RuntimeError(f"the stored log-probability {key!r} requires grad; detach it before the loss")
        return prev

    def _log_weight(self, td: TensorDictBase, batch_ndim: int) -> tuple[Tensor, d.Distribution, Tensor, Tensor | None]:
        """``(log_weight [..., 1], dist, kl_approx [..., 1], log_is_weight or None)``."""
        prev = self._prev_log_prob(td, batch_ndim)
        dist = self._actor_dist(td)
        log_prob = self._log_prob(dist, td, batch_ndim)
        if self.delay_actor:
            with torch.no_grad():
                prox_dist = self._actor_dist(td.copy(), "target")
                prox = self._log_prob(prox_dist, td, batch_ndim)
            log_is_weight = (prox - prev).unsqueeze(-1)
        else:
            prox, log_is_weight = prev, None
        log_weight = (log_prob - prox).unsqueeze(-1)
        # k1 estimator of KL(pi_old || pi) from the sampled actions (Schulman, "Approximating KL divergence").
        kl_approx = (prox - log_prob).unsqueeze(-1)
        if self.max_importance_ratio is not None:
            # Lifting the behaviour log-prob (no gradient) caps pi / pi_behav while keeping a gradient.
            if log_is_weight is None:
                log_is_weight = torch.zeros_like(log_weight)
            log_is_weight = torch.minimum(log_is_weight, self.max_importance_ratio.log() - log_weight.detach())
        return log_weight, dist, kl_approx, log_is_weight

    def _entropy_terms(self, dist: d.Distribution, out: dict, batch_ndim: int) -> None:
        if isinstance(dist, CompositeDistribution):
            self._composite_entropy_terms(dist, out, batch_ndim)
            return
        entropy = entropy_of(dist, self.samples_mc_entropy, batch_ndim)
        out["loss_entropy"] = -self.entropy_coeff * entropy.unsqueeze(-1)
        out["entropy"] = entropy.detach().mean()

    def _composite_entropy_terms(self, dist: CompositeDistribution, out: dict, batch_ndim: int) -> None:
        """Per-head entropies (reported as ``composite_entropy`` when log-probs are not aggregated) and
        the entropy loss, with one coefficient per head when ``entropy_coeff`` is a mapping."""
        heads = head_entropies(dist, self.samples_mc_entropy, batch_ndim)
        summed = {k: v.flatten(batch_ndim, -1).sum(-1) if v.ndim > batch_ndim else v for k, v in heads.items()}
        total = cast(Tensor, sum(summed.values()))
        coeffs = self._entropy_coeff_map
        if coeffs is None:
            out["loss_entropy"] = -self.entropy_coeff * total.unsqueeze(-1)
        else:
            loss: Any = 0.0  # a tensor after the first head
            for key, value in summed.items():
                coeff = coeffs.get(key)
                if coeff is None:
                    raise KeyError(
                        f"{type(self).__name__}: missing entropy coeff for head {key!r}; entropy_coeff needs one "
                        f"coefficient per head entropy {list(summed)}, got {list(coeffs)}"
                    )
                loss = loss - coeff * value
            out["loss_entropy"] = loss.unsqueeze(-1)
        if not composite_lp_aggregate(nowarn=True):
            shape = total.shape
            out["composite_entropy"] = TensorDict(
                {k: v.detach().unsqueeze(batch_ndim) for k, v in heads.items()}, batch_size=[*shape, 1]
            )
        out["entropy"] = total.detach().mean()

    def _critic_terms(self, td: TensorDictBase, out: dict) -> None:
        loss, clip_fraction, value = self._critic_loss(td, self.clip_value, self.loss_critic_type)
        out["loss_critic"] = self.critic_coeff * loss
        if clip_fraction is not None:
            out["value_clip_fraction"] = clip_fraction
        if self.log_explained_variance:
            with torch.no_grad():
                target = self._get(td, self._tensor_keys.value_target)
                pred = value.detach()
                resid = torch.var(target - pred, correction=0, dim=0)
                total = torch.var(target, correction=0, dim=0)
                out["explained_variance"] = 1.0 - resid / (total + torch.finfo(target.dtype).eps)

    def _objective(self, log_weight: Tensor, advantage: Tensor, log_is_weight: Tensor | None, out: dict) -> None:
        if log_is_weight is not None:
            log_weight = log_weight + log_is_weight
        out["loss_objective"] = -log_weight.exp() * advantage

    def _finish(self, td: TensorDictBase, out: dict) -> TensorDict:
        mask = self._mask(td)
        for key in list(out):
            if key.startswith("loss_"):
                out[key] = self._reduce(out[key], mask).squeeze(-1)
        return self._finalize(td, out)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms."""
        if self._token_data:
            return token_ppo_forward(self, tensordict)
        td = tensordict.copy()
        advantage = self._prepared_advantage(td)
        batch_ndim = advantage.ndim - 1
        log_weight, dist, kl_approx, log_is_weight = self._log_weight(td, batch_ndim)
        out: dict[str, Tensor] = {}
        self._objective(log_weight, advantage, log_is_weight, out)
        out["kl_approx"] = kl_approx.detach().mean()
        if self.entropy_bonus:
            self._entropy_terms(dist, out, batch_ndim)
        if self._has_critic:
            self._critic_terms(td, out)
        return self._finish(td, out)


def _check_clip_epsilon(clip_epsilon: tuple[float, float] | list[float]) -> tuple[float, float]:
    """Validates an asymmetric ``(eps_low, eps_high)`` clip threshold."""
    if len(clip_epsilon) != 2:
        raise ValueError(f"clip_epsilon tuple must have length 2 (eps_low, eps_high), got {clip_epsilon}.")
    low, high = float(clip_epsilon[0]), float(clip_epsilon[1])
    if low < 0 or high < 0:
        raise ValueError(f"clip_epsilon values must be non-negative, got ({low}, {high}).")
    if low >= 1.0:
        raise ValueError(f"clip_epsilon low must be < 1 (so that 1 - eps_low > 0), got {low}.")
    return low, high


_CLIP_BUFFERS = ("clip_epsilon", "clip_epsilon_low", "clip_epsilon_high")


class ClipPPOLoss(PPOLoss):
    """Clipped PPO: ``-min(r * A, clip(r, 1 - eps, 1 + eps) * A)`` with ``r = pi / pi_old``.

    Also reports ``clip_fraction``, ``kl_approx``, the effective sample size ``ESS`` and the ratio
    statistics ``max_ratio`` / ``mean_ratio``.

    Args:
        actor_network: probabilistic policy.
        critic_network: state-value network.

    Keyword Args:
        clip_epsilon: clipping threshold (default 0.2), or ``(eps_low, eps_high)`` for asymmetric clipping
            (the ratio is clipped to ``[1 - eps_low, 1 + eps_high]``; buffers ``clip_epsilon_low`` /
            ``clip_epsilon_high`` instead of ``clip_epsilon``).
        clip_value: ``True`` clips the value prediction with ``clip_epsilon``; a float sets its own threshold.
        **kwargs: the other arguments of :class:`PPOLoss` (same meaning and defaults).

    Examples:
        >>> from tdrl.modules import IndependentNormal
        >>> from tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule as ProbMod,
        ...     ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod)
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 4), ["observation"], ["param"]),
        ...     Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ...     ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=IndependentNormal))
        >>> loss = ClipPPOLoss(actor, Mod(torch.nn.Linear(3, 1), ["observation"], ["state_value"]))
        >>> loss.set_keys(sample_log_prob="action_log_prob")
        ClipPPOLoss()
        >>> td = TensorDict({"observation": torch.randn(6, 3), "action": torch.randn(6, 2),
        ...     "action_log_prob": torch.randn(6), "advantage": torch.randn(6, 1),
        ...     "value_target": torch.randn(6, 1)}, [6])
        >>> out = loss(td)
        >>> out["loss_objective"].shape, float(out["clip_fraction"]) <= 1
        (torch.Size([]), True)
    """

    def __init__(
        self,
        actor_network: TensorDictModuleBase | None = None,
        critic_network: TensorDictModuleBase | None = None,
        *,
        clip_epsilon: float | tuple[float, float] = 0.2,
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
        clip_value: bool | float | None = None,
        delay_actor: bool = False,
        max_importance_ratio: float | None = None,
        device: torch.device | None = None,
        **kwargs,
    ) -> None:
        asymmetric = isinstance(clip_epsilon, (tuple, list))
        if isinstance(clip_value, bool):
            if clip_value and asymmetric:
                raise ValueError(
                    "clip_value=True cannot take the value-clip threshold from an asymmetric clip_epsilon "
                    "tuple; pass a float threshold, e.g. clip_value=0.2."
                )
            clip_value = cast(float, clip_epsilon) if clip_value else None  # symmetric here
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
        device = self.entropy_coeff.device
        self._asymmetric_clip = asymmetric
        if asymmetric:
            low, high = _check_clip_epsilon(cast(tuple[float, float], clip_epsilon))
            self.register_buffer("clip_epsilon_low", torch.tensor(low, device=device))
            self.register_buffer("clip_epsilon_high", torch.tensor(high, device=device))
        else:
            self.register_buffer("clip_epsilon", torch.tensor(float(cast(float, clip_epsilon)), device=device))

    def __setattr__(self, name: str, value) -> None:
        # Scheduling the other flavour of threshold (``loss.clip_epsilon = 0.1`` on a loss built with a
        # tuple) would only shadow the buffers the clipping reads: refuse it.
        if name in _CLIP_BUFFERS and isinstance(value, (int, float)) and name not in self.__dict__.get("_buffers", {}):
            buffers = self.__dict__.get("_buffers", {})
            if any(n in buffers for n in _CLIP_BUFFERS):
                wanted = "'clip_epsilon_low' / 'clip_epsilon_high'" if self._asymmetric_clip else "'clip_epsilon'"
                raise AttributeError(
                    f"Cannot schedule {name!r}: this {type(self).__name__} clips with {wanted}; set that instead."
                )
        super().__setattr__(name, value)

    def _clip_bounds(self) -> tuple[Tensor, Tensor]:
        """Bounds of the clipped log-ratio: ``(log(1 - eps_low), log(1 + eps_high))``."""
        if self._asymmetric_clip:
            return (-self.clip_epsilon_low).log1p(), self.clip_epsilon_high.log1p()
        eps = self.clip_epsilon
        return (-eps).log1p(), eps.log1p()

    def _out_keys(self) -> list[str]:
        keys = super()._out_keys()
        keys.insert(1, "clip_fraction")
        return keys + ["ESS", "kl_approx", "max_ratio", "mean_ratio"]

    def _objective(self, log_weight: Tensor, advantage: Tensor, log_is_weight: Tensor | None, out: dict) -> None:
        behav = log_weight if log_is_weight is None else log_weight + log_is_weight
        ratio = behav.exp()  # formed once: the statistics read it detached, the objective with its gradient
        with torch.no_grad():
            lw = behav.squeeze(-1)
            ess = (2 * lw.logsumexp(0) - (2 * lw).logsumexp(0)).exp()
            out["ESS"] = ess / log_weight.shape[0]
            out["max_ratio"] = ratio.max()
            out["mean_ratio"] = ratio.mean()
        # Clipping the log-ratio to [log(1 - eps), log(1 + eps)] is PPO's clip of r (Schulman et al. 2017, eq. 7)
        # without forming r twice; the min below is the pessimistic bound of the same equation.
        clipped = log_weight.clamp(*self._clip_bounds())
        out["clip_fraction"] = (clipped != log_weight).to(log_weight.dtype).mean()
        if log_is_weight is not None:
            clipped = clipped + log_is_weight
        gain = torch.minimum(ratio * advantage, clipped.exp() * advantage)
        out["loss_objective"] = -gain
