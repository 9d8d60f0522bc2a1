"""Configs for trainers (group ``trainer``: ``ppo``, ``a2c``, ``reinforce``, ``sac``, ``dqn``, ``ddpg``, ``td3``).

The factories accept what the tdrl trainer accepts plus TorchRL's config-only fields (``create_env_fn``,
``actor_network``, ``critic_network``, ``hooks``), and complete partial pieces in dependency order:
collector, loss (given the networks), optimizer (given the loss parameters), LR scheduler, target updater.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictSequential

from tdrl.collectors import BaseCollector
from tdrl.data import Categorical, Composite, OneHot
from tdrl.modules import EGreedyModule
from tdrl.objectives import LossModule, TargetNetUpdater
from tdrl.trainers import Trainer, TrainerHookBase
from tdrl.trainers.algorithms import (
    A2CTrainer,
    CQLTrainer,
    DDPGTrainer,
    DQNTrainer,
    IQLTrainer,
    OnPolicyTrainer,
    PPOTrainer,
    ReinforceTrainer,
    SACTrainer,
    TD3OptimizationStepper,
    TD3Trainer,
)
from tdrl.trainers.algorithms.configs.common import ConfigBase, build, normalize_key

__all__ = [
    "A2CTrainerConfig", "CQLTrainerConfig", "DDPGTrainerConfig", "IQLTrainerConfig", "DQNTrainerConfig", "OffPolicyTrainerConfig", "OnPolicyTrainerConfig",
    "PPOTrainerConfig", "ReinforceTrainerConfig", "SACTrainerConfig", "TD3TrainerConfig", "TrainerConfig",
    "make_a2c_trainer", "make_ddpg_trainer", "make_dqn_trainer", "make_ppo_trainer", "make_reinforce_trainer",
    "make_cql_trainer", "make_iql_trainer", "make_sac_trainer", "make_td3_trainer",
]

_KEY_FIELDS = ("done_key", "terminated_key", "reward_key", "episode_reward_key", "action_key", "observation_key")
_EXTRA = (
    inspect.Parameter("create_env_fn", inspect.Parameter.KEYWORD_ONLY, default=None),
    inspect.Parameter("actor_network", inspect.Parameter.KEYWORD_ONLY, default=None),
    inspect.Parameter("critic_network", inspect.Parameter.KEYWORD_ONLY, default=None),
    inspect.Parameter("hooks", inspect.Parameter.KEYWORD_ONLY, default=None),
)
# TorchRL trainer-config fields that tdrl's algorithm trainers do not take: checked here, then dropped.
_BACKEND_FIELDS = (
    inspect.Parameter("learner_backend", inspect.Parameter.KEYWORD_ONLY, default="local"),
    inspect.Parameter("learner_backend_options", inspect.Parameter.KEYWORD_ONLY, default=None),
    inspect.Parameter("learner_poll_interval", inspect.Parameter.KEYWORD_ONLY, default=0.05),
)
_CHECKPOINT_FIELDS = tuple(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None)
                           for name in ("checkpoint", "checkpoint_rotation", "checkpoint_metadata"))


def _check_torchrl_only(kwargs: dict[str, Any]) -> None:
    backend = kwargs.pop("learner_backend", "local")
    if backend != "local":
        raise ValueError(f"trainer.learner_backend: tdrl trains in this process ('local'), got {backend!r}")
    if kwargs.pop("learner_backend_options", None):
        raise ValueError("trainer.learner_backend_options only applies to TorchRL's Ray learner; leave it empty")
    kwargs.pop("learner_poll_interval", None)
    given = [name for name in ("checkpoint", "checkpoint_rotation", "checkpoint_metadata")
             if kwargs.pop(name, None) is not None]
    if given:
        raise ValueError(
            f"trainer.{'/'.join(given)}: TorchRL's Checkpoint objects are not supported; set "
            "trainer.save_trainer_file (tdrl's atomic, weights_only checkpoint) and resume with load_from_file"
        )


def _sync_policy(collector: Any, actor: Any) -> None:
    # YAML interpolations build the collector's policy and the loss actor as two objects: start them equal.
    policy = getattr(collector, "policy", None)
    if not isinstance(actor, torch.nn.Module) or not isinstance(policy, torch.nn.Module) or policy is actor:
        return
    source, dest = TensorDict.from_module(actor), TensorDict.from_module(policy)
    if set(source.keys(True, True)) == set(dest.keys(True, True)):
        collector.update_policy_weights_(source)


def _complete(kwargs: dict[str, Any], network_names: tuple[str, ...],
              fields: tuple[str, ...] = ("actor_network", "critic_network")) -> tuple[dict[str, Any], list[Any]]:
    hooks = list(kwargs.pop("hooks", None) or [])
    kwargs.pop("create_env_fn", None)
    _check_torchrl_only(kwargs)
    # ``critic_network`` (a field of every trainer config) stands for the second network when that is
    # named otherwise (``qvalue_network`` for CQL/IQL)
    critic = kwargs.pop("critic_network", None) if "critic_network" not in fields else None
    networks = {name: build(kwargs.pop(key, None)) for name, key in zip(network_names, fields)}
    if critic is not None:
        if networks[network_names[1]] is not None:
            raise ValueError(f"trainer: set {fields[1]} or critic_network, not both")
        networks[network_names[1]] = build(critic)
    collector = kwargs["collector"]
    if not isinstance(collector, BaseCollector):
        collector = kwargs["collector"] = build(collector)
    if kwargs.get("total_frames") is None:
        kwargs["total_frames"] = collector.total_frames
    loss = kwargs["loss_module"]
    if not isinstance(loss, LossModule):
        loss = kwargs["loss_module"] = build(loss, **{k: v for k, v in networks.items() if v is not None})
    if not isinstance(kwargs["optimizer"], torch.optim.Optimizer):
        kwargs["optimizer"] = build(kwargs["optimizer"], params=loss.parameters())
    scheduler = kwargs.get("lr_scheduler")
    if scheduler is not None and not isinstance(scheduler, torch.optim.lr_scheduler.LRScheduler):
        kwargs["lr_scheduler"] = scheduler(kwargs["optimizer"])
    updater = kwargs.get("target_net_updater")
    if updater is not None and not isinstance(updater, TargetNetUpdater):
        kwargs["target_net_updater"] = updater(loss)
    for key in _KEY_FIELDS:
        if key in kwargs:
            kwargs[key] = normalize_key(kwargs[key])
    _sync_policy(collector, getattr(loss, "actor_network", None) or getattr(loss, "value_network", None))
    return kwargs, hooks


def _register_hooks(trainer: Trainer, hooks: list[Any]) -> Trainer:
    for index, hook in enumerate(hooks):
        hook = build(hook)
        if not isinstance(hook, TrainerHookBase):
            raise TypeError(f"trainer.hooks[{index}] must be a TrainerHookBase, got {type(hook).__name__}")
        cast(Any, hook).register(trainer)  # each concrete hook names its default destination and module
    return trainer


_TD3_FIELDS = (
    inspect.Parameter("optimizer_actor", inspect.Parameter.KEYWORD_ONLY, default=None),
    inspect.Parameter("optimizer_critic", inspect.Parameter.KEYWORD_ONLY, default=None),
    inspect.Parameter("policy_update_delay", inspect.Parameter.KEYWORD_ONLY, default=2),
    inspect.Parameter("value_estimator_gamma", inspect.Parameter.KEYWORD_ONLY, default=None),
)


def _pop_td3_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    # Taken out before _complete, which would otherwise build ``optimizer`` over all the loss's parameters.
    options = {p.name: kwargs.pop(p.name, p.default) for p in _TD3_FIELDS}
    if kwargs.get("optimization_stepper") is None:
        options["optimizer"] = kwargs.pop("optimizer", None)
        kwargs["optimizer"] = None
    return options


def _td3_stepper(loss: Any, options: dict[str, Any]) -> TD3OptimizationStepper | None:
    """TorchRL's TD3 wiring: ``optimizer_actor``/``optimizer_critic`` (else ``optimizer``, instantiated once for
    each) over the actor's and the critics' parameters, stepped by a :class:`TD3OptimizationStepper`."""
    if options["value_estimator_gamma"] is not None:
        loss.make_value_estimator(gamma=options["value_estimator_gamma"])
    if "optimizer" not in options:  # an explicit optimization_stepper
        return None
    actor, critic = options["optimizer_actor"], options["optimizer_critic"]
    if actor is None and critic is None:
        actor = critic = options["optimizer"]
        if actor is None:
            raise TypeError("trainer: TD3 needs trainer.optimizer, or trainer.optimizer_actor and "
                            "trainer.optimizer_critic (or an optimization_stepper)")
        if isinstance(actor, torch.optim.Optimizer):
            raise TypeError("trainer.optimizer: TD3 instantiates it once for the actor and once for the critics, "
                            "so give a partial config (_partial_: true), not an optimizer")
    elif actor is None or critic is None:
        raise TypeError("trainer: TD3 requires both optimizer_actor and optimizer_critic when overriding optimizer")
    groups = {"actor": (actor, loss.actor_network_params), "critic": (critic, loss.qvalue_network_params)}
    optimizers = {name: opt if isinstance(opt, torch.optim.Optimizer) else build(opt, params=list(
        params.values(True, True))) for name, (opt, params) in groups.items()}
    return TD3OptimizationStepper(optimizers["actor"], optimizers["critic"],
                                  policy_update_delay=int(options["policy_update_delay"]))


def _trainer_factory(cls: type[Trainer], network_names: tuple[str, ...],
                     fields: tuple[str, ...] = ("actor_network", "critic_network")) -> Callable[..., Trainer]:
    """A factory for ``cls``: config field ``fields[i]`` is passed to the loss as ``network_names[i]``."""

    def make(**kwargs: Any) -> Trainer:
        # async_collection: TorchRL collects in the background while the trainer optimises. tdrl's async and
        # multi_async collectors already do: a worker starts its next batch as soon as the last one is handed
        # over, so the trainer runs its usual loop (one optimisation round per batch, reward logging intact).
        async_collection = bool(kwargs.pop("async_collection", False))
        td3 = _pop_td3_options(kwargs) if issubclass(cls, TD3Trainer) else None
        kwargs, hooks = _complete(kwargs, network_names, fields)
        if td3 is not None:
            stepper = _td3_stepper(kwargs["loss_module"], td3)
            if stepper is not None:
                kwargs["optimization_stepper"] = stepper
        if issubclass(cls, OnPolicyTrainer):
            gae = kwargs.get("gae")
            if gae is not None and not isinstance(gae, torch.nn.Module):
                kwargs["gae"] = build(gae, value_network=kwargs["loss_module"].critic_network)
        trainer = cls(**kwargs)
        # after __init__, which refuses True: the async collectors already overlap collection (see above)
        trainer.async_collection = async_collection
        return _register_hooks(trainer, hooks)

    params = [p for name, p in inspect.signature(cls).parameters.items()
              if name != "self" and p.kind is not p.VAR_KEYWORD]
    if cls is DQNTrainer:  # DQNTrainer forwards **kwargs to the off-policy trainer
        params += [p for name, p in inspect.signature(cls.__mro__[1]).parameters.items()
                   if name not in {"self", *(q.name for q in params)} and p.kind is not p.VAR_KEYWORD]
    extra = [p for p in _EXTRA if p.name not in fields] + [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None) for name in fields]
    params = [p.replace(kind=p.KEYWORD_ONLY) for p in params] + extra + [
        p for p in (*_BACKEND_FIELDS, *_CHECKPOINT_FIELDS) if p.name not in {q.name for q in params}]
    if issubclass(cls, TD3Trainer):
        params += _TD3_FIELDS
    make.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    make.__name__ = f"make_{cls.__name__}"
    make.__doc__ = f"Builds a :class:`{cls.__name__}`, completing partial configs (collector, loss, optimizer)."
    return make


make_ppo_trainer = _trainer_factory(PPOTrainer, ("actor_network", "critic_network"))
make_a2c_trainer = _trainer_factory(A2CTrainer, ("actor_network", "critic_network"))
make_reinforce_trainer = _trainer_factory(ReinforceTrainer, ("actor_network", "critic_network"))
make_sac_trainer = _trainer_factory(SACTrainer, ("actor_network", "qvalue_network"))
make_td3_trainer = _trainer_factory(TD3Trainer, ("actor_network", "qvalue_network"), ("actor_network", "qvalue_network"))
make_ddpg_trainer = _trainer_factory(DDPGTrainer, ("actor_network", "value_network"))
_make_dqn_base = _trainer_factory(DQNTrainer, ("value_network", "critic_network"))
make_cql_trainer = _trainer_factory(CQLTrainer, ("actor_network", "qvalue_network"), ("actor_network", "qvalue_network"))
make_iql_trainer = _trainer_factory(IQLTrainer, ("actor_network", "qvalue_network", "value_network"),
                                    ("actor_network", "qvalue_network", "value_network"))


def _action_spec(value_network: Any, action_key: Any) -> Composite:
    spec = getattr(value_network, "spec", None)
    leaf = spec.get(action_key, None) if isinstance(spec, Composite) else None
    if leaf is None:
        n_actions = next(m for m in reversed(list(value_network.modules())) if hasattr(m, "out_features")).out_features
        leaf = Categorical(n_actions) if getattr(value_network, "action_space", None) == "categorical" else OneHot(
            n_actions)
    return Composite({action_key: leaf})


def make_dqn_trainer(
    *,
    value_network: Any = None,
    greedy_module: Any = None,
    eps_init: float = 1.0,
    eps_end: float = 0.05,
    annealing_num_steps: int = 250_000,
    **kwargs: Any,
) -> DQNTrainer:
    """Builds a :class:`~tdrl.trainers.algorithms.DQNTrainer` the way TorchRL's DQN config does.

    The collector (if partial) runs ``value_network`` followed by an epsilon-greedy module (``greedy_module``,
    or an :class:`~tdrl.modules.EGreedyModule` annealed from ``eps_init`` to ``eps_end`` over
    ``annealing_num_steps`` frames); a partial loss gets ``value_network``, so both share one network.
    Other arguments are those of the DQN trainer (see :class:`DQNTrainerConfig`).
    """
    loss = kwargs.get("loss_module")
    value_network = build(value_network)
    if value_network is None and isinstance(loss, LossModule):
        value_network = loss.value_network
    if value_network is not None:
        action_key = normalize_key(kwargs.get("action_key", "action"))
        spec = _action_spec(value_network, action_key)
        if greedy_module is None:
            greedy_module = EGreedyModule(spec, eps_init=eps_init, eps_end=eps_end,
                                          annealing_num_steps=annealing_num_steps, action_key=action_key)
        elif not isinstance(greedy_module, torch.nn.Module):
            greedy_module = greedy_module(spec=spec, action_key=action_key)
        if not isinstance(kwargs["collector"], BaseCollector):
            kwargs["collector"] = build(kwargs["collector"], policy=TensorDictSequential(value_network, greedy_module))
        if not isinstance(loss, LossModule):
            kwargs["loss_module"] = build(loss, value_network=value_network)
    return cast(DQNTrainer, _make_dqn_base(greedy_module=greedy_module, **kwargs))


_DQN_EXTRA = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default) for name, default in (
    ("value_network", None), ("eps_init", 1.0), ("eps_end", 0.05), ("annealing_num_steps", 250_000))]
make_dqn_trainer.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    list(inspect.signature(_make_dqn_base).parameters.values()) + _DQN_EXTRA)


@dataclass
class TrainerConfig(ConfigBase):
    """Fields shared by all trainers; ``collector``, ``loss_module`` and ``optimizer`` may be partial configs.

    Examples:
        >>> cfg = PPOTrainerConfig(total_frames=1024, clip_norm=0.5)
        >>> isinstance(cfg, TrainerConfig), cfg.optim_steps_per_batch, cfg.clip_grad_norm
        (True, 1, True)
    """

    collector: Any = None
    total_frames: int | None = None
    optim_steps_per_batch: int | None = 1
    loss_module: Any = None
    optimizer: Any = None
    logger: Any = None
    save_trainer_file: Any = None
    replay_buffer: Any = None
    frame_skip: int = 1
    clip_grad_norm: bool = True
    clip_norm: float | None = None
    progress_bar: bool = True
    seed: int | None = None
    save_trainer_interval: int = 10000
    log_interval: int = 10000
    create_env_fn: Any = None
    actor_network: Any = None
    critic_network: Any = None
    target_net_updater: Any = None
    async_collection: bool = False
    log_timings: bool = False
    auto_log_optim_steps: bool = True
    batch_size: int | None = None
    enable_logging: bool = True
    log_rewards: bool = True
    log_actions: bool = True
    log_observations: bool = False
    done_key: Any = "done"
    terminated_key: Any = "terminated"
    reward_key: Any = "reward"
    action_key: Any = "action"
    observation_key: Any = "observation"
    hooks: Any = None
    timing_print_interval: int | None = None
    checkpoint: Any = None
    checkpoint_rotation: Any = None
    checkpoint_metadata: Any = None


@dataclass
class OnPolicyTrainerConfig(TrainerConfig):
    """Fields of the on-policy trainers (GAE before each epoch, minibatches from ``replay_buffer``).

    Examples:
        >>> cfg = A2CTrainerConfig(lmbda=0.9)
        >>> isinstance(cfg, OnPolicyTrainerConfig), cfg.add_gae, cfg.gamma, cfg.lmbda
        (True, True, 0.99, 0.9)
    """

    num_epochs: int = 1
    add_gae: bool = True
    gae: Any = None
    lr_scheduler: Any = None
    weight_update_map: Any = None
    gamma: float = 0.99
    lmbda: float = 0.95
    episode_reward_key: Any = "reward"


@dataclass
class PPOTrainerConfig(OnPolicyTrainerConfig):
    """:class:`~tdrl.trainers.algorithms.PPOTrainer` (4 epochs per batch by default).

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.structured(PPOTrainerConfig(total_frames=1024))
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.num_epochs, cfg.total_frames
        ('make_ppo_trainer', 4, 1024)
    """

    num_epochs: int = 4
    _target_: str = "tdrl.trainers.algorithms.configs.trainers.make_ppo_trainer"


@dataclass
class A2CTrainerConfig(OnPolicyTrainerConfig):
    """:class:`~tdrl.trainers.algorithms.A2CTrainer`.

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.structured(A2CTrainerConfig(total_frames=1024))
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.num_epochs, cfg.total_frames
        ('make_a2c_trainer', 1, 1024)
    """

    _target_: str = "tdrl.trainers.algorithms.configs.trainers.make_a2c_trainer"


@dataclass
class ReinforceTrainerConfig(OnPolicyTrainerConfig):
    """:class:`~tdrl.trainers.algorithms.ReinforceTrainer`.

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.structured(ReinforceTrainerConfig(total_frames=1024))
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.num_epochs, cfg.total_frames
        ('make_reinforce_trainer', 1, 1024)
    """

    _target_: str = "tdrl.trainers.algorithms.configs.trainers.make_reinforce_trainer"


@dataclass
class OffPolicyTrainerConfig(TrainerConfig):
    """Fields of the replay-buffer trainers.

    Examples:
        >>> cfg = SACTrainerConfig(num_epochs=2)
        >>> isinstance(cfg, OffPolicyTrainerConfig), cfg.num_epochs, cfg.learner_backend
        (True, 2, 'local')
    """

    num_epochs: int = 1
    optimization_stepper: Any = None
    exploration_module: Any = None
    episode_reward_key: Any = "reward_sum"
    learner_backend: str = "local"
    learner_backend_options: Any = None
    learner_poll_interval: float = 0.05


@dataclass
class SACTrainerConfig(OffPolicyTrainerConfig):
    """:class:`~tdrl.trainers.algorithms.SACTrainer` (``critic_network`` is the Q-value network).

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.structured(SACTrainerConfig(total_frames=1000, batch_size=256))
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.batch_size, cfg.optim_steps_per_batch
        ('make_sac_trainer', 256, 1)
    """

    _target_: str = "tdrl.trainers.algorithms.configs.trainers.make_sac_trainer"


@dataclass
class TD3TrainerConfig(OffPolicyTrainerConfig):
    """:class:`~tdrl.trainers.algorithms.TD3Trainer` with TorchRL's delayed actor update.

    Unless ``optimization_stepper`` is given, the trainer steps a
    :class:`~tdrl.trainers.algorithms.TD3OptimizationStepper`: the critics every step, the actor (and the
    target networks) every ``policy_update_delay``-th step, with ``optimizer_actor``/``optimizer_critic``, or
    the partial ``optimizer`` instantiated once for each. ``value_estimator_gamma`` sets the loss's discount.

    Examples:
        >>> cfg = TD3TrainerConfig(policy_update_delay=3, value_estimator_gamma=0.98)
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.policy_update_delay, cfg.value_estimator_gamma
        ('make_td3_trainer', 3, 0.98)
    """

    qvalue_network: Any = None
    optimizer_actor: Any = None
    optimizer_critic: Any = None
    policy_update_delay: int = 2
    value_estimator_gamma: float | None = None
    _target_: str = "tdrl.trainers.algorithms.configs.trainers.make_td3_trainer"


@dataclass
class DDPGTrainerConfig(OffPolicyTrainerConfig):
    """:class:`~tdrl.trainers.algorithms.DDPGTrainer`.

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.structured(DDPGTrainerConfig(total_frames=1000, batch_size=256))
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.batch_size, cfg.optim_steps_per_batch
        ('make_ddpg_trainer', 256, 1)
    """

    _target_: str = "tdrl.trainers.algorithms.configs.trainers.make_ddpg_trainer"


@dataclass
class DQNTrainerConfig(OffPolicyTrainerConfig):
    """:class:`~tdrl.trainers.algorithms.DQNTrainer`; ``value_network`` is shared by the loss and the collector.

    Examples:
        >>> cfg = DQNTrainerConfig(eps_init=0.5, annealing_num_steps=1000)
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.eps_init, cfg.eps_end, cfg.annealing_num_steps
        ('make_dqn_trainer', 0.5, 0.05, 1000)
    """

    value_network: Any = None
    greedy_module: Any = None
    eps_init: float = 1.0
    eps_end: float = 0.05
    annealing_num_steps: int = 250_000
    _target_: str = "tdrl.trainers.algorithms.configs.trainers.make_dqn_trainer"


@dataclass
class CQLTrainerConfig(OffPolicyTrainerConfig):
    """:class:`~tdrl.trainers.algorithms.CQLTrainer`; ``qvalue_network`` goes to a partial loss.

    Examples:
        >>> cfg = CQLTrainerConfig(batch_size=256)
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.batch_size, cfg.num_epochs
        ('make_cql_trainer', 256, 1)
    """

    qvalue_network: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.trainers.make_cql_trainer"


@dataclass
class IQLTrainerConfig(OffPolicyTrainerConfig):
    """:class:`~tdrl.trainers.algorithms.IQLTrainer`; ``qvalue_network``/``value_network`` go to a partial loss.

    Examples:
        >>> cfg = IQLTrainerConfig(batch_size=256)
        >>> cfg._target_.rsplit(".", 1)[-1], cfg.batch_size, cfg.episode_reward_key
        ('make_iql_trainer', 256, 'reward_sum')
    """

    qvalue_network: Any = None
    value_network: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.trainers.make_iql_trainer"


# TorchRL's private factory names, so that a TorchRL YAML's ``_target_`` resolves here after the import swap.
_make_ppo_trainer = make_ppo_trainer
_make_a2c_trainer = make_a2c_trainer
_make_reinforce_trainer = make_reinforce_trainer
_make_sac_trainer = make_sac_trainer
_make_td3_trainer = make_td3_trainer
_make_ddpg_trainer = make_ddpg_trainer
_make_dqn_trainer = make_dqn_trainer
_make_cql_trainer = make_cql_trainer
_make_iql_trainer = make_iql_trainer
