"""REINFORCE loss with a learned baseline: ``loss_actor = -log pi(a|s) * advantage``, ``loss_value``.

Williams, "Simple statistical gradient-following algorithms for connectionist reinforcement learning",
https://doi.org/10.1007/BF00992696.
"""

from __future__ import annotations

import dataclasses

from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.objectives._actor_critic import ActorCriticLossBase, default_log_prob_key
from tdrl.objectives.utils import ValueEstimators, check_loss_function, check_reduction

__all__ = ["ReinforceLoss"]


class ReinforceLoss(ActorCriticLossBase["ReinforceLoss._AcceptedKeys"]):
    """REINFORCE with a value baseline.

    Args:
        actor_network: probabilistic policy (``get_dist``).
        critic_network: state-value network writing ``"state_value"``.

    Keyword Args:
        delay_value: keep target critic parameters for the value estimator (default ``False``).
        loss_critic_type: ``"smooth_l1"`` (default), ``"l2"`` or ``"l1"``.
        gamma: removed; must be ``None``.
        advantage_key, value_target_key: removed; must be ``None`` (use :meth:`set_keys`).
        separate_losses: shared parameters are trained by the actor loss only.
        functional: ``False`` is accepted as in TorchRL (the networks run with their own parameters either
            way; ``loss.functional`` reports the flag).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        clip_value: clip the value prediction around the stored value before the critic loss.

    Examples:
        >>> import torch
        >>> from tdrl.modules import IndependentNormal
        >>> from tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule as ProbMod,
        ...     ProbabilisticTensorDictSequential as ProbSeq, TensorDictModule as Mod)
        >>> actor = ProbSeq(Mod(torch.nn.Linear(3, 4), ["observation"], ["param"]),
        ...     Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ...     ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=IndependentNormal))
        >>> loss = ReinforceLoss(actor, Mod(torch.nn.Linear(3, 1), ["observation"], ["state_value"]))
        >>> td = TensorDict({"observation": torch.randn(6, 3), "action": torch.randn(6, 2),
        ...     "advantage": torch.randn(6, 1), "value_target": torch.randn(6, 1)}, [6])
        >>> sorted(loss(td).keys())
        ['loss_actor', 'loss_value']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`ReinforceLoss`."""

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

    default_value_estimator = ValueEstimators.TD0
    SUPPORTED_VALUE_ESTIMATORS = tuple(ValueEstimators)

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        critic_network: TensorDictModuleBase | None = None,
        *,
        delay_value: bool = False,
        loss_critic_type: str = "smooth_l1",
        gamma: float | None = None,
        advantage_key: str | None = None,
        value_target_key: str | None = None,
        separate_losses: bool = False,
        functional: bool = True,
        actor: TensorDictModuleBase | None = None,
        critic: TensorDictModuleBase | None = None,
        reduction: str | None = None,
        clip_value: float | None = None,
    ) -> None:
        actor_network = actor if actor is not None else actor_network
        critic_network = critic if critic is not None else critic_network
        if actor_network is None or critic_network is None:
            raise TypeError("Missing positional arguments actor_network or critic_network.")
        if gamma is not None:
            raise TypeError("gamma is no longer a loss argument; use loss.make_value_estimator(gamma=...)")
        super().__init__()
        self._functional = functional
        self._set_deprecated_ctor_keys(advantage=advantage_key, value_target=value_target_key)
        self._setup_networks(actor_network, critic_network, separate_losses=separate_losses, delay_value=delay_value)
        self.delay_value = delay_value
        self.loss_critic_type = check_loss_function(loss_critic_type)
        self.reduction = check_reduction(reduction)
        self._optional_buffer("clip_value", clip_value)

    def _out_keys(self) -> list[str]:
        keys = ["loss_actor", "loss_value"]
        if self.clip_value is not None:
            keys.append("value_clip_fraction")
        return keys

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """Computes the loss terms."""
        td = tensordict.copy()
        advantage = self._advantage(td)
        batch_ndim = advantage.ndim - 1
        dist = self._actor_dist(td)
        log_prob = self._log_prob(dist, td, batch_ndim)
        if log_prob.shape == advantage.shape[:-1]:
            log_prob = log_prob.unsqueeze(-1)
        out: dict[str, Tensor] = {"loss_actor": -log_prob * advantage.detach()}
        loss, clip_fraction, _ = self._critic_loss(td, self.clip_value, self.loss_critic_type)
        out["loss_value"] = loss
        if clip_fraction is not None:
            out["value_clip_fraction"] = clip_fraction
        mask = self._mask(td)
        for key in list(out):
            if key.startswith("loss_"):
                out[key] = self._reduce(out[key], mask).squeeze(-1)
        return self._finalize(td, out)
