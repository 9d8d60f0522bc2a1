"""Configs for losses (group ``loss``), value estimators (``value``) and target updaters (``target_net_updater``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from omegaconf import MISSING

from tdrl.objectives import (
    A2CLoss,
    ClipPPOLoss,
    CQLLoss,
    DDPGLoss,
    DiscreteIQLLoss,
    DiscreteSACLoss,
    DQNLoss,
    IQLLoss,
    KLPENPPOLoss,
    LossModule,
    PPOLoss,
    ReinforceLoss,
    SACLoss,
    TD3Loss,
)
from tdrl.objectives.value import GAE
from tdrl.trainers.algorithms.configs.common import ConfigBase, build, normalize_key

__all__ = [
    "A2CLossConfig", "DDPGLossConfig", "DQNLossConfig", "GAEConfig", "HardUpdateConfig", "LossConfig",
    "PPOLossConfig", "ReinforceLossConfig", "SACLossConfig", "SoftUpdateConfig", "TD3LossConfig",
    "TargetNetUpdaterConfig", "make_a2c_loss", "make_cql_loss", "make_ddpg_loss", "make_dqn_loss", "make_gae", "make_iql_loss",
    "make_ppo_loss",
    "make_reinforce_loss", "make_sac_loss", "make_td3_loss",
]


@dataclass
class LossConfig(ConfigBase):
    """Parent of loss configs.

    Examples:
        >>> isinstance(SACLossConfig(), LossConfig), LossConfig()._partial_
        (True, False)
    """

    _partial_: bool = False


_Loss = TypeVar("_Loss", bound=LossModule)


def _set_keys(loss: _Loss, **keys: Any) -> _Loss:
    keys = {name: normalize_key(value) for name, value in keys.items() if value is not None}
    if keys:
        loss.set_keys(**keys)
    return loss


def _gamma_factory(cls: type[LossModule], key_fields: tuple[str, ...] = ()) -> Callable[..., LossModule]:
    # The losses reject ``gamma`` (TorchRL 0.14 moved it to the value estimator) and key names (set_keys):
    # route both there.
    def make(*args: Any, gamma: float | None = None, **kwargs: Any) -> LossModule:
        keys = {field.removesuffix("_key"): kwargs.pop(field, None) for field in key_fields}
        loss = cls(*args, **kwargs)
        if gamma is not None:
            loss.make_value_estimator(gamma=gamma)
        return _set_keys(loss, **keys)

    # The loss's ``**kwargs`` (kept for TorchRL's signature) only rejects unknown names: not a config field.
    params = [p for p in inspect.signature(cls).parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    names = {p.name for p in params}
    params += [inspect.Parameter(f, inspect.Parameter.KEYWORD_ONLY, default=None) for f in key_fields if f not in names]
    make.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    make.__name__ = f"make_{cls.__name__}"
    make.__doc__ = f"Builds a :class:`{cls.__name__}`; ``gamma`` configures its value estimator."
    return make


make_a2c_loss = _gamma_factory(A2CLoss, ("advantage_key", "value_target_key"))
make_reinforce_loss = _gamma_factory(ReinforceLoss, ("advantage_key", "value_target_key"))
make_ddpg_loss = _gamma_factory(DDPGLoss)
make_td3_loss = _gamma_factory(TD3Loss)


@dataclass
class PPOLossConfig(LossConfig):
    """A PPO loss: :class:`~tdrl.objectives.ClipPPOLoss` (``loss_type: clip``), ``KLPENPPOLoss`` (``kl``) or ``PPOLoss`` (``ppo``).

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.modules import MLPConfig, TanhNormalModelConfig, ValueModelConfig
        >>> cfg = PPOLossConfig(
        ...     actor_network=TanhNormalModelConfig(network=MLPConfig(in_features=3, out_features=2)),
        ...     critic_network=ValueModelConfig(network=MLPConfig(in_features=3, out_features=1)))
        >>> type(instantiate(cfg)).__name__
        'ClipPPOLoss'
    """

    actor_network: Any = None
    critic_network: Any = None
    loss_type: str = "clip"
    entropy_bonus: bool = True
    samples_mc_entropy: int = 1
    entropy_coeff: Any = None
    log_explained_variance: bool = True
    critic_coeff: float | None = None
    loss_critic_type: str = "smooth_l1"
    normalize_advantage: bool = False
    normalize_advantage_exclude_dims: Any = ()
    advantage_norm: Any = None
    gamma: float | None = None
    separate_losses: bool = False
    advantage_key: Any = None
    value_target_key: Any = None
    value_key: Any = None
    functional: bool = True
    actor: Any = None
    critic: Any = None
    reduction: str | None = None
    clip_value: float | None = None
    delay_actor: bool = False
    max_importance_ratio: float | None = None
    clip_epsilon: Any = 0.2
    dtarg: float = 0.01
    beta: float = 1.0
    increment: float = 2.0
    decrement: float = 0.5
    samples_mc_kl: int = 1
    device: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.objectives.make_ppo_loss"


def make_ppo_loss(
    actor_network: Any = None,
    critic_network: Any = None,
    loss_type: Literal["clip", "kl", "ppo"] = "clip",
    entropy_bonus: bool = True,
    samples_mc_entropy: int = 1,
    entropy_coeff: Any = None,
    log_explained_variance: bool = True,
    critic_coeff: float | None = None,
    loss_critic_type: str = "smooth_l1",
    normalize_advantage: bool = False,
    normalize_advantage_exclude_dims: Any = (),
    advantage_norm: Any = None,
    gamma: float | None = None,
    separate_losses: bool = False,
    advantage_key: Any = None,
    value_target_key: Any = None,
    value_key: Any = None,
    functional: bool = True,
    actor: Any = None,
    critic: Any = None,
    reduction: str | None = None,
    clip_value: float | None = None,
    delay_actor: bool = False,
    max_importance_ratio: float | None = None,
    clip_epsilon: Any = 0.2,
    dtarg: float = 0.01,
    beta: float = 1.0,
    increment: float = 2.0,
    decrement: float = 0.5,
    samples_mc_kl: int = 1,
    device: Any = None,
) -> PPOLoss:
    """Builds the PPO loss of ``loss_type``; each flavour gets only its own arguments, key names go to ``set_keys``.

    Examples:
        >>> import torch
        >>> from tdrl.trainers.algorithms.configs.modules import make_tanh_normal_model, make_value_model
        >>> loss = make_ppo_loss(make_tanh_normal_model(torch.nn.Linear(3, 2)), make_value_model(torch.nn.Linear(3, 1)),
        ...                      loss_type="kl", advantage_key="adv")
        >>> type(loss).__name__, loss.tensor_keys.advantage
        ('KLPENPPOLoss', 'adv')
    """
    common: dict[str, Any] = dict(
        entropy_bonus=entropy_bonus, samples_mc_entropy=samples_mc_entropy, entropy_coeff=entropy_coeff,
        log_explained_variance=log_explained_variance, critic_coeff=critic_coeff,
        loss_critic_type=loss_critic_type, normalize_advantage=normalize_advantage,
        normalize_advantage_exclude_dims=tuple(normalize_advantage_exclude_dims),
        advantage_norm=build(advantage_norm),
        separate_losses=separate_losses, functional=functional, actor=build(actor), critic=build(critic),
        reduction=reduction, clip_value=clip_value, delay_actor=delay_actor,
        max_importance_ratio=max_importance_ratio, device=device,
    )
    actor_network, critic_network = build(actor_network), build(critic_network)
    if loss_type == "clip":
        eps = clip_epsilon if isinstance(clip_epsilon, (int, float)) else tuple(clip_epsilon)
        loss: PPOLoss = ClipPPOLoss(actor_network, critic_network, clip_epsilon=eps, **common)
    elif loss_type == "kl":
        loss = KLPENPPOLoss(actor_network, critic_network, dtarg=dtarg, beta=beta, increment=increment,
                            decrement=decrement, samples_mc_kl=samples_mc_kl, **common)
    elif loss_type == "ppo":
        loss = PPOLoss(actor_network, critic_network, **common)
    else:
        raise ValueError(f"loss_type must be 'clip', 'kl' or 'ppo', got {loss_type!r}")
    if gamma is not None:
        loss.make_value_estimator(gamma=gamma)
    return _set_keys(loss, advantage=advantage_key, value_target=value_target_key, value=value_key)


@dataclass
class A2CLossConfig(LossConfig):
    """:class:`~tdrl.objectives.A2CLoss`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.modules import MLPConfig, TanhNormalModelConfig, ValueModelConfig
        >>> cfg = A2CLossConfig(actor_network=TanhNormalModelConfig(network=MLPConfig(in_features=3, out_features=2)),
        ...                     critic_network=ValueModelConfig(network=MLPConfig(in_features=3, out_features=1)))
        >>> type(instantiate(cfg)).__name__
        'A2CLoss'
    """

    actor_network: Any = None
    critic_network: Any = None
    entropy_bonus: bool = True
    samples_mc_entropy: int = 1
    entropy_coeff: float | None = None
    critic_coeff: float | None = 1.0
    loss_critic_type: str = "smooth_l1"
    gamma: float | None = None
    separate_losses: bool = False
    functional: bool = True
    actor: Any = None
    critic: Any = None
    advantage_key: Any = None
    value_target_key: Any = None
    reduction: str | None = None
    clip_value: float | None = None
    advantage_norm: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.objectives.make_a2c_loss"


@dataclass
class ReinforceLossConfig(LossConfig):
    """:class:`~tdrl.objectives.ReinforceLoss`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.modules import MLPConfig, TanhNormalModelConfig, ValueModelConfig
        >>> cfg = ReinforceLossConfig(actor_network=TanhNormalModelConfig(network=MLPConfig(in_features=3, out_features=2)),
        ...                           critic_network=ValueModelConfig(network=MLPConfig(in_features=3, out_features=1)))
        >>> type(instantiate(cfg)).__name__
        'ReinforceLoss'
    """

    actor_network: Any = None
    critic_network: Any = None
    delay_value: bool = False
    loss_critic_type: str = "smooth_l1"
    gamma: float | None = None
    separate_losses: bool = False
    functional: bool = True
    actor: Any = None
    critic: Any = None
    advantage_key: Any = None
    value_target_key: Any = None
    reduction: str | None = None
    clip_value: float | None = None
    _target_: str = "tdrl.trainers.algorithms.configs.objectives.make_reinforce_loss"


@dataclass
class SACLossConfig(LossConfig):
    """:class:`~tdrl.objectives.SACLoss`, or :class:`~tdrl.objectives.DiscreteSACLoss` with ``discrete: true``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.modules import MLPConfig, TanhNormalModelConfig, ValueModelConfig
        >>> from tdrl.data import Bounded
        >>> cfg = SACLossConfig(
        ...     actor_network=TanhNormalModelConfig(network=MLPConfig(in_features=3, out_features=2)),
        ...     qvalue_network=ValueModelConfig(network=MLPConfig(in_features=4, out_features=1),
        ...                                     in_keys=["observation", "action"], out_keys=["state_action_value"]),
        ...     action_spec=Bounded(-1.0, 1.0, shape=(1,)))
        >>> loss = instantiate(cfg)
        >>> type(loss).__name__, loss.num_qvalue_nets
        ('SACLoss', 2)
    """

    actor_network: Any = None
    qvalue_network: Any = None
    value_network: Any = None
    discrete: bool = False
    action_space: Any = None
    num_actions: int | None = None
    num_qvalue_nets: int = 2
    loss_function: str = "smooth_l1"
    alpha_init: float = 1.0
    min_alpha: float | None = None
    max_alpha: float | None = None
    action_spec: Any = None
    fixed_alpha: bool = False
    target_entropy: Any = "auto"
    target_entropy_weight: float = 0.98
    delay_actor: bool = False
    delay_qvalue: bool = True
    delay_value: bool = True
    gamma: float | None = None
    priority_key: str | None = None
    separate_losses: bool = False
    reduction: str | None = None
    skip_done_states: bool = False
    deactivate_vmap: bool = False
    use_prioritized_weights: Any = "auto"
    scalar_output_mode: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.objectives.make_sac_loss"


def make_sac_loss(
    actor_network: Any = None,
    qvalue_network: Any = None,
    value_network: Any = None,
    discrete: bool = False,
    action_space: Any = None,
    num_actions: int | None = None,
    num_qvalue_nets: int = 2,
    loss_function: str = "smooth_l1",
    alpha_init: float = 1.0,
    min_alpha: float | None = None,
    max_alpha: float | None = None,
    action_spec: Any = None,
    fixed_alpha: bool = False,
    target_entropy: Any = "auto",
    target_entropy_weight: float = 0.98,
    delay_actor: bool = False,
    delay_qvalue: bool = True,
    delay_value: bool = True,
    gamma: float | None = None,
    priority_key: str | None = None,
    separate_losses: bool = False,
    reduction: str | None = None,
    skip_done_states: bool = False,
    deactivate_vmap: bool = False,
    use_prioritized_weights: Any = "auto",
    scalar_output_mode: Any = None,
) -> LossModule:
    """Builds a continuous or (``discrete=True``) discrete SAC loss; ``gamma`` builds its value estimator.

    Examples:
        >>> import torch
        >>> from tdrl.data import Bounded
        >>> from tdrl.trainers.algorithms.configs.modules import make_tanh_normal_model, make_value_model
        >>> actor = make_tanh_normal_model(torch.nn.Linear(3, 2))
        >>> qvalue = make_value_model(torch.nn.Linear(4, 1), in_keys=["observation", "action"],
        ...                           out_keys=["state_action_value"])
        >>> loss = make_sac_loss(actor, qvalue, action_spec=Bounded(-1.0, 1.0, shape=(1,)), gamma=0.9)
        >>> type(loss).__name__, float(loss.target_entropy)
        ('SACLoss', -1.0)
    """
    shared = dict(num_qvalue_nets=num_qvalue_nets, loss_function=loss_function, alpha_init=alpha_init,
                  min_alpha=min_alpha, max_alpha=max_alpha, fixed_alpha=fixed_alpha, target_entropy=target_entropy,
                  delay_qvalue=delay_qvalue, priority_key=priority_key, separate_losses=separate_losses,
                  reduction=reduction, skip_done_states=skip_done_states, deactivate_vmap=deactivate_vmap,
                  use_prioritized_weights=use_prioritized_weights, scalar_output_mode=scalar_output_mode)
    actor, qvalue = build(actor_network), build(qvalue_network)
    if discrete:
        loss: LossModule = DiscreteSACLoss(actor, qvalue, action_space=action_space, num_actions=num_actions,
                                           target_entropy_weight=target_entropy_weight, **shared)
    else:
        loss = SACLoss(actor, qvalue, build(value_network), action_spec=action_spec, delay_actor=delay_actor,
                       delay_value=delay_value, **shared)
    if gamma is not None:
        loss.make_value_estimator(gamma=gamma)
    return loss


@dataclass
class DDPGLossConfig(LossConfig):
    """:class:`~tdrl.objectives.DDPGLoss`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.modules import MLPConfig, TensorDictModuleConfig, ValueModelConfig
        >>> cfg = DDPGLossConfig(
        ...     actor_network=TensorDictModuleConfig(module=MLPConfig(in_features=3, out_features=1),
        ...                                          in_keys=["observation"], out_keys=["action"]),
        ...     value_network=ValueModelConfig(network=MLPConfig(in_features=4, out_features=1),
        ...                                    in_keys=["observation", "action"], out_keys=["state_action_value"]))
        >>> type(instantiate(cfg)).__name__
        'DDPGLoss'
    """

    actor_network: Any = MISSING
    value_network: Any = MISSING
    loss_function: str = "l2"
    delay_actor: bool = False
    delay_value: bool = True
    gamma: float | None = None
    separate_losses: bool = False
    reduction: str | None = None
    use_prioritized_weights: Any = "auto"
    _target_: str = "tdrl.trainers.algorithms.configs.objectives.make_ddpg_loss"


@dataclass
class TD3LossConfig(LossConfig):
    """:class:`~tdrl.objectives.TD3Loss`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.data import Bounded
        >>> from tdrl.trainers.algorithms.configs.modules import MLPConfig, TensorDictModuleConfig, ValueModelConfig
        >>> cfg = TD3LossConfig(
        ...     actor_network=TensorDictModuleConfig(module=MLPConfig(in_features=3, out_features=1),
        ...                                          in_keys=["observation"], out_keys=["action"]),
        ...     qvalue_network=ValueModelConfig(network=MLPConfig(in_features=4, out_features=1),
        ...                                     in_keys=["observation", "action"], out_keys=["state_action_value"]),
        ...     action_spec=Bounded(-1.0, 1.0, shape=(1,)))
        >>> type(instantiate(cfg)).__name__
        'TD3Loss'
    """

    actor_network: Any = MISSING
    qvalue_network: Any = MISSING
    action_spec: Any = None
    bounds: Any = None
    num_qvalue_nets: int = 2
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    loss_function: str = "smooth_l1"
    delay_actor: bool = True
    delay_qvalue: bool = True
    gamma: float | None = None
    priority_key: str | None = None
    separate_losses: bool = False
    reduction: str | None = None
    deactivate_vmap: bool = False
    use_prioritized_weights: Any = "auto"
    _target_: str = "tdrl.trainers.algorithms.configs.objectives.make_td3_loss"


@dataclass
class DQNLossConfig(LossConfig):
    """:class:`~tdrl.objectives.DQNLoss`; the ``*_key`` fields rename the tensordict keys it reads.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.modules import MLPConfig, QValueModelConfig
        >>> qnet = QValueModelConfig(network=MLPConfig(in_features=4, out_features=2), action_space="one_hot")
        >>> instantiate(DQNLossConfig(value_network=qnet, gamma=0.9)).tensor_keys.action
        'action'
    """

    value_network: Any = None
    loss_function: str = "l2"
    delay_value: bool = True
    double_dqn: bool = False
    action_space: Any = None
    gamma: float | None = None
    priority_key: Any = None
    reduction: str | None = None
    use_prioritized_weights: Any = "auto"
    action_key: Any = None
    action_value_key: Any = None
    value_key: Any = None
    reward_key: Any = None
    done_key: Any = None
    terminated_key: Any = None
    priority_weight_key: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.objectives.make_dqn_loss"


def make_dqn_loss(
    value_network: Any = None,
    loss_function: str = "l2",
    delay_value: bool = True,
    double_dqn: bool = False,
    action_space: Any = None,
    gamma: float | None = None,
    priority_key: Any = None,
    reduction: str | None = None,
    use_prioritized_weights: Any = "auto",
    action_key: Any = None,
    action_value_key: Any = None,
    value_key: Any = None,
    reward_key: Any = None,
    done_key: Any = None,
    terminated_key: Any = None,
    priority_weight_key: Any = None,
) -> DQNLoss:
    """Builds a :class:`~tdrl.objectives.DQNLoss` and renames its keys.

    Examples:
        >>> import torch
        >>> from tdrl.trainers.algorithms.configs.modules import make_qvalue_model
        >>> loss = make_dqn_loss(make_qvalue_model(torch.nn.Linear(4, 2), action_space="one_hot"), reward_key="r")
        >>> loss.tensor_keys.reward
        'r'
    """
    loss = DQNLoss(build(value_network), loss_function=loss_function, delay_value=delay_value,
                   double_dqn=double_dqn, action_space=action_space, reduction=reduction,
                   use_prioritized_weights=use_prioritized_weights)
    if gamma is not None:
        loss.make_value_estimator(gamma=gamma)
    return _set_keys(loss, action=action_key, action_value=action_value_key, value=value_key, reward=reward_key,
                     done=done_key, terminated=terminated_key, priority=priority_key,
                     priority_weight=priority_weight_key)


@dataclass
class TargetNetUpdaterConfig(ConfigBase):
    """Parent of target updaters: partial configs completed with the loss (``updater(loss_module)``).

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> from tdrl.modules import ValueOperator
        >>> from tdrl.objectives import DQNLoss
        >>> loss = DQNLoss(ValueOperator(torch.nn.Linear(3, 2), in_keys=["observation"], out_keys=["action_value"]),
        ...                action_space="one_hot", delay_value=True)
        >>> cfg = SoftUpdateConfig(tau=0.5)
        >>> isinstance(cfg, TargetNetUpdaterConfig), cfg._partial_
        (True, True)
        >>> type(instantiate(cfg)(loss_module=loss)).__name__
        'SoftUpdate'
    """

    loss_module: Any = MISSING
    _partial_: bool = True


@dataclass
class SoftUpdateConfig(TargetNetUpdaterConfig):
    """:class:`~tdrl.objectives.SoftUpdate` (Polyak averaging with ``tau``).

    Examples:
        >>> from hydra.utils import instantiate
        >>> make_updater = instantiate(SoftUpdateConfig(tau=0.01))  # partial: the trainer passes the loss
        >>> make_updater.keywords
        {'eps': None, 'tau': 0.01}
    """

    eps: float | None = None
    tau: float | None = 0.001
    _target_: str = "tdrl.objectives.SoftUpdate"


@dataclass
class HardUpdateConfig(TargetNetUpdaterConfig):
    """:class:`~tdrl.objectives.HardUpdate` (copy every ``value_network_update_interval`` steps).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(HardUpdateConfig(value_network_update_interval=10)).keywords
        {'value_network_update_interval': 10}
    """

    value_network_update_interval: int = 1000
    _target_: str = "tdrl.objectives.HardUpdate"


@dataclass
class GAEConfig(LossConfig):
    """:class:`~tdrl.objectives.value.GAE`; ``*_key`` fields rename the keys it reads and writes.

    Examples:
        >>> from hydra.utils import instantiate
        >>> gae = instantiate(GAEConfig(gamma=0.9, lmbda=0.8, advantage_key="adv"))
        >>> gae.tensor_keys.advantage
        'adv'
    """

    gamma: float | None = None
    lmbda: float | None = None
    value_network: Any = None
    average_gae: bool = False
    differentiable: bool = False
    vectorized: bool | None = None
    skip_existing: bool | None = None
    advantage_key: Any = None
    value_target_key: Any = None
    value_key: Any = None
    shifted: bool = False
    device: Any = None
    time_dim: int | None = None
    auto_reset_env: bool = False
    deactivate_vmap: bool = False
    _target_: str = "tdrl.trainers.algorithms.configs.objectives.make_gae"


def make_gae(
    gamma: float | None = None,
    lmbda: float | None = None,
    value_network: Any = None,
    average_gae: bool = False,
    differentiable: bool = False,
    vectorized: bool | None = None,
    skip_existing: bool | None = None,
    advantage_key: Any = None,
    value_target_key: Any = None,
    value_key: Any = None,
    shifted: bool = False,
    device: Any = None,
    time_dim: int | None = None,
    auto_reset_env: bool = False,
    deactivate_vmap: bool = False,
) -> GAE:
    """Builds a :class:`~tdrl.objectives.value.GAE` (``gamma`` and ``lmbda`` are required).

    Examples:
        >>> make_gae(gamma=0.99, lmbda=0.95, value_network=None).gamma
        tensor(0.9900)
    """
    if gamma is None or lmbda is None:
        raise ValueError("GAE needs gamma and lmbda")
    gae = GAE(gamma=gamma, lmbda=lmbda, value_network=build(value_network), average_gae=average_gae,
              differentiable=differentiable, vectorized=vectorized, skip_existing=skip_existing, shifted=shifted,
              device=device, time_dim=time_dim, auto_reset_env=auto_reset_env, deactivate_vmap=deactivate_vmap)
    keys = {k: normalize_key(v) for k, v in (("advantage", advantage_key), ("value_target", value_target_key),
                                             ("value", value_key)) if v is not None}
    if keys:
        gae.set_keys(**keys)
    return gae


# CQLLoss's own signature (gamma goes to its value estimator): the config below must match it
make_cql_loss = _gamma_factory(CQLLoss)


def make_iql_loss(
    actor_network: Any = None,
    qvalue_network: Any = None,
    value_network: Any = None,
    discrete: bool = False,
    action_space: Any = None,
    num_qvalue_nets: int = 2,
    loss_function: str = "smooth_l1",
    temperature: float = 1.0,
    expectile: float = 0.5,
    gamma: float | None = None,
    priority_key: str | None = None,
    separate_losses: bool = False,
    reduction: str | None = None,
    deactivate_vmap: bool = False,
    scalar_output_mode: Any = None,
) -> LossModule:
    """Builds an :class:`~tdrl.objectives.IQLLoss`, or a ``DiscreteIQLLoss`` with ``discrete: true``.

    Examples:
        >>> import torch
        >>> from tdrl.trainers.algorithms.configs.modules import make_tanh_normal_model, make_value_model
        >>> loss = make_iql_loss(make_tanh_normal_model(torch.nn.Linear(3, 2)),
        ...     make_value_model(torch.nn.Linear(4, 1), in_keys=["observation", "action"],
        ...                      out_keys=["state_action_value"]),
        ...     make_value_model(torch.nn.Linear(3, 1)), expectile=0.7)
        >>> type(loss).__name__, float(loss.expectile)
        ('IQLLoss', 0.7)
    """
    actor, qvalue, value = build(actor_network), build(qvalue_network), build(value_network)
    shared = dict(num_qvalue_nets=num_qvalue_nets, loss_function=loss_function, temperature=temperature,
                  expectile=expectile, priority_key=priority_key, separate_losses=separate_losses,
                  reduction=reduction, scalar_output_mode=scalar_output_mode)
    if discrete:
        if deactivate_vmap:
            raise ValueError("loss.deactivate_vmap applies to the continuous IQL loss only (discrete: false)")
        loss: LossModule = DiscreteIQLLoss(actor, qvalue, value, action_space=action_space, **shared)
    else:
        if action_space is not None:
            raise ValueError("loss.action_space applies to the discrete IQL loss only (set discrete: true)")
        loss = IQLLoss(actor, qvalue, value, deactivate_vmap=deactivate_vmap, **shared)
    if gamma is not None:
        loss.make_value_estimator(gamma=gamma)
    return loss


# TorchRL's private factory names, so that a TorchRL YAML's ``_target_`` resolves here after the import swap.
_make_ppo_loss = make_ppo_loss
_make_a2c_loss = make_a2c_loss
_make_reinforce_loss = make_reinforce_loss
_make_sac_loss = make_sac_loss
_make_dqn_loss = make_dqn_loss
_make_ddpg_loss = make_ddpg_loss
_make_td3_loss = make_td3_loss
_make_cql_loss = make_cql_loss
_make_iql_loss = make_iql_loss
_make_gae = make_gae
