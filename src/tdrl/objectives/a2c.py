"""A2C loss: ``-log pi(a|s) * advantage`` plus entropy bonus and critic loss.

Mnih et al., "Asynchronous Methods for Deep Reinforcement Learning", https://arxiv.org/abs/1602.01783.
"""

from __future__ import annotations

import dataclasses

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.objectives._actor_critic import (
    ActorCriticLossBase,
    default_log_prob_key,
    entropy_of,
)
from tdrl.objectives._advantage_norm import AdvantageNorm, check_advantage_norm, scale_advantage
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction

__all__ = ["A2CLoss"]


class A2CLoss(ActorCriticLossBase["A2CLoss._AcceptedKeys"]):
    """Advantage actor-critic loss.

    Args:
        actor_network: probabilistic policy (``get_dist``).
        critic_network: state-value network writing ``"state_value"``.

    Keyword Args:
        entropy_bonus: add ``loss_entropy = -entropy_coeff * entropy`` (default ``True``).
        samples_mc_entropy: MC samples when the entropy has no closed form (default 1).
        entropy_coeff: entropy multiplier (default 0.01).
        critic_coeff: critic-loss multiplier (default 1.0; ``None`` drops the critic loss).
        loss_critic_type: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        advantage_norm: a running value normaliser (``update(value_target)`` and ``scale()``, such as
            TorchRL's ``ValueNorm``); the advantage is divided by ``scale()``, and, when the loss computes
            the advantage itself in training mode, ``update`` first sees the valid value-target rows.
        gamma: removed; must be ``None``.
        separate_losses: shared parameters are trained by the actor loss only.
        advantage_key, value_target_key: removed; must be ``None`` (use :meth:`set_keys`).
        functional: ``False`` is accepted as in TorchRL (the networks run with their own parameters either
            way; ``loss.functional`` reports the flag).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        clip_value: clip the value prediction around the stored value before the critic loss.

    Examples:
        >>> from tdrl.modules import IndependentNormal
        >>> from tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule as ProbMod,
        ...     ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod)
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 4), ["observation"], ["param"]),
        ...     Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ...     ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=IndependentNormal))
        >>> loss = A2CLoss(actor, Mod(torch.nn.Linear(3, 1), ["observation"], ["state_value"]))
        >>> td = TensorDict({"observation": torch.randn(6, 3), "action": torch.randn(6, 2),
        ...     "advantage": torch.randn(6, 1), "value_target": torch.randn(6, 1)}, [6])
        >>> sorted(loss(td).keys())
        ['entropy', 'loss_critic', 'loss_entropy', 'loss_objective']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`A2CLoss`."""

        advantage: NestedKey = "advantage"
        value_target: NestedKey = "value_target"
        value: NestedKey = "state_value"
        action: NestedKey | list[NestedKey] = "action"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        sample_log_prob: NestedKey | list[NestedKey] | None = None

        def __post_init__(self) -> None:
            if self.sample_log_prob is None:
                self.sample_log_prob = default_log_prob_key()

    default_value_estimator = ValueEstimators.GAE
    SUPPORTED_VALUE_ESTIMATORS = tuple(ValueEstimators)

    def __init__(
        self,
        actor_network: TensorDictModuleBase | None = None,
        critic_network: TensorDictModuleBase | None = None,
        *,
        entropy_bonus: bool = True,
        samples_mc_entropy: int = 1,
        entropy_coeff: float | None = None,
        critic_coeff: float | None = 1.0,
        loss_critic_type: str = "smooth_l1",
        advantage_norm: AdvantageNorm | None = None,
        gamma: float | None = None,
        separate_losses: bool = False,
        advantage_key: str | None = None,
        value_target_key: str | None = None,
        functional: bool = True,
        actor: TensorDictModuleBase | None = None,
        critic: TensorDictModuleBase | None = None,
        reduction: str | None = None,
        clip_value: float | None = None,
        **kwargs,
    ) -> None:
        self._check_no_extra_kwargs(str(type(self).__name__), kwargs)
        check_advantage_norm(advantage_norm)
        actor_network = actor if actor is not None else actor_network
        critic_network = critic if critic is not None else critic_network
        if actor_network is None or critic_network is None:
            raise TypeError("Missing positional arguments actor_network or critic_network.")
        if gamma is not None:
            raise TypeError("gamma is no longer a loss argument; use loss.make_value_estimator(gamma=...)")
        super().__init__()
        self._functional = functional
        self._set_deprecated_ctor_keys(advantage=advantage_key, value_target=value_target_key)
        self._setup_networks(actor_network, critic_network, separate_losses=separate_losses)
        self.advantage_norm = advantage_norm
        entropy_coeff = 0.01 if entropy_coeff is None else entropy_coeff
        self.entropy_bonus = bool(entropy_bonus and entropy_coeff)
        self.samples_mc_entropy = samples_mc_entropy
        self.loss_critic_type = check_loss_function(loss_critic_type)
        self.reduction = check_reduction(reduction)
        device = self._default_device()
        self.register_buffer("entropy_coeff", torch.tensor(float(entropy_coeff), device=device))
        self._optional_buffer("critic_coeff", critic_coeff, device)
        self._optional_buffer("clip_value", clip_value, device)

    def _out_keys(self) -> list[str]:
        keys = ["loss_objective"]  # TorchRL's order (a keyword call returns a tuple in this order)
        if self.critic_coeff is not None:
            keys.append("loss_critic")
        if self.entropy_bonus:
            keys += ["entropy", "loss_entropy"]
        if self.clip_value is not None:
            keys.append("value_clip_fraction")
        return keys

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms."""
        td = tensordict.copy()
        if self.advantage_norm is None:
            advantage = self._advantage(td)
        else:
            computed = td.get(self._tensor_keys.advantage, None) is None
            advantage = scale_advantage(self, self._advantage(td), td, update=computed and self.training)
        batch_ndim = advantage.ndim - 1
        dist = self._actor_dist(td)
        log_prob = self._log_prob(dist, td, batch_ndim)
        out: dict[str, Tensor] = {"loss_objective": -(log_prob.unsqueeze(-1) * advantage)}
        if self.entropy_bonus:
            entropy = entropy_of(dist, self.samples_mc_entropy, batch_ndim).unsqueeze(-1)
            out["entropy"] = entropy.detach().mean()
            out["loss_entropy"] = -self.entropy_coeff * entropy
        if self.critic_coeff is not None:
            loss, clip_fraction, _ = self._critic_loss(td, self.clip_value, self.loss_critic_type)
            out["loss_critic"] = self.critic_coeff * loss
            if clip_fraction is not None:
                out["value_clip_fraction"] = clip_fraction
        mask = self._mask(td)
        for key in list(out):
            if key.startswith("loss_"):
                out[key] = self._reduce(out[key], mask).squeeze(-1)
        return self._finalize(td, out)
