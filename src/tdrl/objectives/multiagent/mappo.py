"""Multi-agent PPO: :class:`MAPPOLoss` (centralised critic) and :class:`IPPOLoss` (per-agent critics).

Yu et al., "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games", https://arxiv.org/abs/2103.01955;
de Witt et al., "Is Independent Learning All You Need in the StarCraft Multi-Agent Challenge?",
https://arxiv.org/abs/2011.09533.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.modules.value_norm import ValueNorm
from tdrl.objectives._ppo import ClipPPOLoss
from tdrl.objectives.utils import ValueEstimators

__all__ = ["IPPOLoss", "MAPPOLoss"]


class MAPPOLoss(ClipPPOLoss):
    """Clipped PPO for a team: decentralised actors, a centralised critic, :class:`MultiAgentGAE` by default.

    The data follow the multi-agent layout of :class:`~tdrl.envs.libs.vmas.VmasEnv`: per-agent entries under
    ``"agents"`` (``[*B, T, n_agents, ...]``) and team-shared or per-agent rewards and flags. Differences from
    :class:`~tdrl.objectives.ClipPPOLoss`: the default estimator is ``ValueEstimators.MAGAE``, the advantage is
    standardised by default with the agent dimension kept out (``normalize_advantage_exclude_dims=(-2,)``), and
    an optional ``value_norm`` puts the critic loss on a normalised scale (PopArt, Yu et al. 2022): the value
    target, the prediction and the stored value (for ``clip_value``) are normalised with the running statistics,
    which are updated once per call with the raw value target.

    Args:
        actor_network: per-agent policy (e.g. a :class:`~tdrl.modules.MultiAgentMLP` with
            ``centralized=False``).
        critic_network: value network writing ``("agents", "state_value")`` (``[*B, n_agents, 1]``); centralised
            (``MultiAgentMLP(centralized=True)`` or a network of a global state).

    Keyword Args:
        value_norm: a :class:`~tdrl.modules.ValueNorm` (``PopArtValueNorm``, ``RunningValueNorm``, ...) or ``None``.
        entropy_coeff: entropy multiplier (default 0.01).
        normalize_advantage: standardise the advantage (default ``True``).
        normalize_advantage_exclude_dims: dimensions kept out of the standardisation (default ``(-2,)``).
        **kwargs: the other arguments of :class:`~tdrl.objectives.ClipPPOLoss`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule as Mod
        >>> from tdrl.modules import MultiAgentMLP, PopArtValueNorm, ProbabilisticActor, TanhNormal
        >>> net = torch.nn.Sequential(MultiAgentMLP(3, 4, 2, centralized=False, share_params=True, depth=1,
        ...                                         num_cells=8), NormalParamExtractor())
        >>> actor = ProbabilisticActor(Mod(net, [("agents", "observation")], [("agents", "loc"), ("agents", "scale")]),
        ...     in_keys=[("agents", "loc"), ("agents", "scale")], out_keys=[("agents", "action")],
        ...     distribution_class=TanhNormal)
        >>> critic = Mod(MultiAgentMLP(3, 1, 2, centralized=True, share_params=True, depth=1, num_cells=8),
        ...              [("agents", "observation")], [("agents", "state_value")])
        >>> loss = MAPPOLoss(actor, critic, value_norm=PopArtValueNorm(shape=1))
        >>> loss.set_keys(value=("agents", "state_value"), action=("agents", "action"),
        ...               sample_log_prob=("agents", "action_log_prob"))
        MAPPOLoss()
        >>> td = TensorDict({"agents": {"observation": torch.randn(4, 5, 2, 3), "action": torch.rand(4, 5, 2, 2) - 0.5,
        ...     "action_log_prob": torch.randn(4, 5, 2)}, "next": {"agents": {"observation": torch.randn(4, 5, 2, 3)},
        ...     "reward": torch.randn(4, 5, 1), "done": torch.zeros(4, 5, 1, dtype=torch.bool),
        ...     "terminated": torch.zeros(4, 5, 1, dtype=torch.bool)}}, [4, 5])
        >>> loss(td)["loss_objective"].shape
        torch.Size([])
    """

    default_value_estimator = ValueEstimators.MAGAE

    def __init__(
        self,
        actor_network: TensorDictModuleBase | None = None,
        critic_network: TensorDictModuleBase | None = None,
        *,
        value_norm: ValueNorm | None = None,
        entropy_coeff: float | Mapping[NestedKey, float] = 0.01,
        normalize_advantage: bool = True,
        normalize_advantage_exclude_dims: tuple[int, ...] = (-2,),
        **kwargs: Any,
    ) -> None:
        super().__init__(
            actor_network,
            critic_network,
            entropy_coeff=entropy_coeff,
            normalize_advantage=normalize_advantage,
            normalize_advantage_exclude_dims=normalize_advantage_exclude_dims,
            **kwargs,
        )
        if value_norm is not None and not isinstance(value_norm, ValueNorm):
            raise TypeError(
                f"{type(self).__name__}: value_norm must be a ValueNorm or None, got "
                f"{type(value_norm).__name__}"
            )
        self.value_norm = value_norm

    def _state_value(self, td: TensorDictBase) -> Tensor:
        value = super()._state_value(td)
        return value if self.value_norm is None else self.value_norm.normalize(value)

    def _critic_terms(self, td: TensorDictBase, out: dict) -> None:
        norm = self.value_norm
        if norm is not None:
            # The critic loss (and its clip radius, and the explained variance) on the normalised scale.
            keys = self._tensor_keys
            target = self._get(td, keys.value_target)
            norm.update(target)
            td = td.copy()
            td.set(keys.value_target, norm.normalize(target.detach()))
            if self.clip_value is not None:
                td.set(keys.value, norm.normalize(self._get(td, keys.value)))
        super()._critic_terms(td, out)


class IPPOLoss(MAPPOLoss):
    """Independent PPO: :class:`MAPPOLoss` with per-agent (decentralised) critics.

    The loss is :class:`MAPPOLoss`; what makes it IPPO is the critic passed in: each agent's value depends on
    its own observation only (e.g. ``MultiAgentMLP(centralized=False, share_params=True)``).

    Args:
        actor_network: per-agent policy.
        critic_network: per-agent value network writing ``("agents", "state_value")``.

    Keyword Args:
        value_norm: a :class:`~tdrl.modules.ValueNorm` or ``None`` (default).
        entropy_coeff: entropy multiplier (default 0.01).
        normalize_advantage: standardise the advantage (default ``True``).
        normalize_advantage_exclude_dims: dimensions kept out of the standardisation (default ``(-2,)``).
        **kwargs: the other arguments of :class:`~tdrl.objectives.ClipPPOLoss`.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> from tdrl.modules import MultiAgentMLP, ProbabilisticActor, TanhNormal
        >>> from tensordict.nn import NormalParamExtractor
        >>> net = torch.nn.Sequential(MultiAgentMLP(3, 4, 2, centralized=False, share_params=True, depth=0),
        ...                           NormalParamExtractor())
        >>> actor = ProbabilisticActor(Mod(net, [("agents", "observation")], [("agents", "loc"), ("agents", "scale")]),
        ...     in_keys=[("agents", "loc"), ("agents", "scale")], out_keys=[("agents", "action")],
        ...     distribution_class=TanhNormal)
        >>> critic = Mod(MultiAgentMLP(3, 1, 2, centralized=False, share_params=True, depth=0),
        ...              [("agents", "observation")], [("agents", "state_value")])
        >>> loss = IPPOLoss(actor, critic).set_keys(value=("agents", "state_value"), action=("agents", "action"))
        >>> type(loss.value_estimator).__name__
        'MultiAgentGAE'
    """
