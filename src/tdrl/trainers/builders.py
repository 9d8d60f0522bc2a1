"""Builds the parts of a run from a validated config: env, networks (sizes from the env specs), loss, trainer.

Only plain values come in (an :class:`omegaconf.DictConfig` or a dict, see :mod:`tdrl.trainers.config`);
every object is made here, so a complete config for a new env is a few lines.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Mapping
from typing import Any

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement, TensorDictReplayBuffer
from tdrl.data.tensor_specs import Categorical, OneHot
from tdrl.envs import (
    CatTensors,
    Compose,
    DMControlEnv,
    DoubleToFloat,
    EnvBase,
    GymEnv,
    PendulumEnv,
    RewardSum,
    TransformedEnv,
)
from tdrl.modules import (
    MLP,
    AdditiveGaussianModule,
    EGreedyModule,
    NormalParamExtractor,
    OneHotCategorical,
    ProbabilisticActor,
    QValueActor,
    TanhModule,
    TanhNormal,
    ValueOperator,
)
from tdrl.objectives import (
    A2CLoss,
    ClipPPOLoss,
    CQLLoss,
    DDPGLoss,
    DiscreteCQLLoss,
    DiscreteIQLLoss,
    DQNLoss,
    IQLLoss,
    ReinforceLoss,
    SACLoss,
    SoftUpdate,
    TD3Loss,
)
from tdrl.trainers.algorithms import (
    A2CTrainer,
    CQLTrainer,
    DDPGTrainer,
    DQNTrainer,
    IQLTrainer,
    PPOTrainer,
    ReinforceTrainer,
    SACTrainer,
    TD3OptimizationStepper,
    TD3Trainer,
)
from tdrl.trainers.datasets import check_dataset, load_dataset

__all__ = [
    "ACTIVATIONS",
    "ALGORITHMS",
    "OFFLINE",
    "OFF_POLICY",
    "Agent",
    "build_agent",
    "build_env",
    "build_networks",
    "build_trainer",
    "is_offline",
    "loss_fields",
]

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "gelu": nn.GELU}

#: algorithm name -> (loss class, trainer class)
ALGORITHMS: dict[str, tuple[type, type]] = {
    "ppo": (ClipPPOLoss, PPOTrainer),
    "a2c": (A2CLoss, A2CTrainer),
    "reinforce": (ReinforceLoss, ReinforceTrainer),
    "sac": (SACLoss, SACTrainer),
    "dqn": (DQNLoss, DQNTrainer),
    "td3": (TD3Loss, TD3Trainer),
    "ddpg": (DDPGLoss, DDPGTrainer),
    "cql": (CQLLoss, CQLTrainer),
    "iql": (IQLLoss, IQLTrainer),
}
#: algorithms that learn from a replay buffer (they accept the ``replay``/``target``/``exploration`` sections)
OFF_POLICY = ("sac", "dqn", "td3", "ddpg", "cql", "iql")
#: algorithms that can learn offline from a dataset (``dataset.path``); their discrete-action losses
OFFLINE: dict[str, type] = {"cql": DiscreteCQLLoss, "iql": DiscreteIQLLoss}
#: off-policy algorithms with a deterministic actor explored by additive Gaussian noise
DETERMINISTIC = ("td3", "ddpg")

# Keys of the ``loss`` section consumed by the trainer (GAE) rather than the loss constructor.
_ESTIMATOR_FIELDS = ("gamma", "lmbda")
_NOT_CONFIGURABLE = {"self", "args", "actor_network", "critic_network", "actor", "critic", "kwargs", "qvalue_network",
                     "value_network", "action_spec", "action_space", "delay_value", "delay_qvalue", "delay_actor",
                     # TorchRL's deprecated key arguments: the losses refuse them (keys are set with set_keys)
                     "advantage_key", "value_target_key", "value_key"}


def loss_fields(algo: str) -> list[str]:
    """Keys accepted in the ``loss`` section for ``algo`` (its loss's ``__init__`` keywords plus GAE's).

    Examples:
        >>> "clip_epsilon" in loss_fields("ppo")
        True
    """
    loss_cls = ALGORITHMS[algo][0]
    names: set[str] = set(_ESTIMATOR_FIELDS) if algo not in OFF_POLICY else {"gamma"}
    for cls in loss_cls.__mro__:
        if "__init__" in vars(cls):
            names |= {p for p in inspect.signature(cls.__init__).parameters if p not in _NOT_CONFIGURABLE}
    return sorted(names)


def build_env(env_cfg: Mapping[str, Any], *, num_envs: int | None = None) -> EnvBase:
    """An env from its config (``name``, ``num_envs``, ``kwargs``), with a ``RewardSum`` for episode returns.

    ``pendulum`` is tdrl's pure-torch pendulum; ``dmc:DOMAIN/TASK`` (e.g. ``dmc:cheetah/run``) a dm_control
    task, its observations concatenated into ``"observation"``; anything else is a gymnasium id, vectorised
    with gymnasium's own vector env when ``num_envs > 1``. Double-precision entries (MuJoCo, dm_control)
    are cast to float32.

    Examples:
        >>> env = build_env({"name": "CartPole-v1", "num_envs": 2})
        >>> env.batch_size
        torch.Size([2])
        >>> env.close()
    """
    n = int(env_cfg.get("num_envs", 1) if num_envs is None else num_envs)
    if n < 1:
        raise ValueError(f"env.num_envs must be >= 1, got {n}")
    name = str(env_cfg["name"])
    kwargs = dict(env_cfg.get("kwargs") or {})
    transforms: list[Any] = []
    if name == "pendulum":
        base: EnvBase = PendulumEnv(batch_size=[n] if n > 1 else [])
    elif name.startswith("dmc:"):
        domain, _, task = name[4:].partition("/")
        if not task or n > 1:
            raise ValueError(f"dm_control envs are named 'dmc:DOMAIN/TASK' (e.g. dmc:cheetah/run) and run with "
                             f"env.num_envs=1, got {name!r} with num_envs={n}")
        base = DMControlEnv(domain, task, **kwargs)
        transforms.append(CatTensors(list(base.observation_spec.keys(True, True)), "observation"))
    elif n > 1:
        base = GymEnv(name, num_envs=n, **kwargs)
    else:
        base = GymEnv(name, **kwargs)
    specs = [base.observation_spec, base.full_reward_spec]
    if any(leaf.dtype == torch.float64 for spec in specs for leaf in spec.values(True, True)):
        transforms.append(DoubleToFloat())
    return TransformedEnv(base, Compose(*transforms, RewardSum()))


def _mlp(n_in: int, n_out: int, net_cfg: Mapping[str, Any]) -> MLP:
    activation = str(net_cfg.get("activation", "tanh"))
    if activation not in ACTIVATIONS:
        raise ValueError(f"network.activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    return MLP(in_features=n_in, out_features=n_out, num_cells=list(net_cfg.get("num_cells", [64, 64])),
               activation_class=ACTIVATIONS[activation])


def build_networks(env: EnvBase, net_cfg: Mapping[str, Any]) -> tuple[ProbabilisticActor, ValueOperator]:
    """A stochastic actor and a state-value critic sized from ``env``'s specs.

    Discrete actions (``OneHot``/``Categorical``) get a categorical policy; continuous ones a
    ``TanhNormal`` bounded by the action spec.
    """
    obs_spec = env.observation_spec["observation"]
    n_obs = obs_spec.shape[-1]
    action_spec = env.action_spec
    if isinstance(action_spec, (OneHot, Categorical)):
        n_act = action_spec.space.n
        module = TensorDictModule(_mlp(n_obs, n_act, net_cfg), ["observation"], ["logits"])
        actor = ProbabilisticActor(module, in_keys=["logits"], distribution_class=OneHotCategorical,
                                   spec=action_spec, return_log_prob=True)
        if isinstance(action_spec, Categorical):
            raise ValueError("categorical (integer) action specs are not supported by the preset builder; "
                             "use a one-hot action env (GymEnv's default)")
    else:
        n_act = action_spec.shape[-1]
        net = nn.Sequential(_mlp(n_obs, 2 * n_act, net_cfg), NormalParamExtractor())
        module = TensorDictModule(net, ["observation"], ["loc", "scale"])
        low, high = action_spec.space.low, action_spec.space.high
        actor = ProbabilisticActor(
            module, in_keys=["loc", "scale"], distribution_class=TanhNormal, spec=action_spec,
            distribution_kwargs={"low": low.reshape(-1, n_act)[0], "high": high.reshape(-1, n_act)[0]},
            return_log_prob=True,
        )
    critic = ValueOperator(_mlp(n_obs, 1, net_cfg), in_keys=["observation"])
    return actor, critic


@dataclasses.dataclass
class Agent:
    """What a run trains: the evaluation policy, the collector's (exploring) policy, the loss and extras."""

    policy: nn.Module
    collector_policy: nn.Module
    loss: nn.Module
    target_updater: Any = None
    exploration: Any = None


def _loss_kwargs(loss_cfg: Mapping[str, Any], drop: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in loss_cfg.items() if k not in drop}


def build_agent(cfg: Mapping[str, Any], env: EnvBase) -> Agent:
    """Networks sized from ``env``'s specs, the loss of ``cfg.algo`` and its target updater/exploration."""
    algo, net_cfg, loss_cfg = cfg["algo"], cfg["network"], cfg["loss"]
    n_obs = env.observation_spec["observation"].shape[-1]
    if algo == "dqn":
        if not isinstance(env.action_spec, OneHot):
            raise ValueError("algo=dqn needs a discrete (one-hot) action env such as CartPole-v1")
        qnet = QValueActor(_mlp(n_obs, env.action_spec.space.n, net_cfg), in_keys=["observation"], spec=env.action_spec)
        exp_cfg = cfg.get("exploration") or {}
        greedy = EGreedyModule(env.action_spec, eps_init=float(exp_cfg.get("eps_init", 1.0)),
                               eps_end=float(exp_cfg.get("eps_end", 0.05)),
                               annealing_num_steps=int(exp_cfg.get("annealing_frames", 10_000)))
        loss = DQNLoss(qnet, action_space=env.action_spec, delay_value=True, **_loss_kwargs(loss_cfg, ("gamma",)))
        loss.make_value_estimator(gamma=float(loss_cfg.get("gamma", 0.99)))
        return Agent(qnet, TensorDictSequential(qnet, greedy), loss, _soft_update(cfg, loss), greedy)
    if algo in DETERMINISTIC:
        return _deterministic_agent(cfg, env)
    if algo in OFFLINE:
        return _conservative_agent(cfg, env)
    actor, critic = build_networks(env, net_cfg)
    if algo == "sac":
        n_act = env.action_spec.shape[-1]
        qnet = ValueOperator(_mlp(n_obs + n_act, 1, net_cfg), in_keys=["observation", "action"])
        loss = SACLoss(actor, qnet, action_spec=env.action_spec, **_loss_kwargs(loss_cfg, ("gamma",)))
        loss.make_value_estimator(gamma=float(loss_cfg.get("gamma", 0.99)))
        return Agent(actor, actor, loss, _soft_update(cfg, loss))
    loss = ALGORITHMS[algo][0](actor, critic, **_loss_kwargs(loss_cfg, _ESTIMATOR_FIELDS))
    return Agent(actor, actor, loss)


def _deterministic_agent(cfg: Mapping[str, Any], env: EnvBase) -> Agent:
    # TD3/DDPG: a tanh-bounded deterministic actor, a Q(s, a) critic and annealed Gaussian action noise.
    algo, net_cfg, loss_cfg = cfg["algo"], cfg["network"], cfg["loss"]
    spec = env.action_spec
    if isinstance(spec, (OneHot, Categorical)):
        raise ValueError(f"algo={algo} needs a continuous action env such as Pendulum-v1")
    n_obs, n_act = env.observation_spec["observation"].shape[-1], spec.shape[-1]
    low, high = spec.space.low.reshape(-1, n_act)[0], spec.space.high.reshape(-1, n_act)[0]
    actor = TensorDictSequential(
        TensorDictModule(_mlp(n_obs, n_act, net_cfg), ["observation"], ["param"]),
        TanhModule(["param"], ["action"], low=low, high=high),
    )
    qnet = ValueOperator(_mlp(n_obs + n_act, 1, net_cfg), in_keys=["observation", "action"])
    kwargs = _loss_kwargs(loss_cfg, ("gamma",))
    if algo == "td3":
        loss: nn.Module = TD3Loss(actor, qnet, action_spec=spec, **kwargs)
    else:
        loss = DDPGLoss(actor, qnet, **kwargs)
    loss.make_value_estimator(gamma=float(loss_cfg.get("gamma", 0.99)))
    exp_cfg = cfg.get("exploration") or {}
    noise = AdditiveGaussianModule(spec, sigma_init=float(exp_cfg.get("sigma_init", 0.1)),
                                   sigma_end=float(exp_cfg.get("sigma_end", 0.1)),
                                   annealing_num_steps=int(exp_cfg.get("annealing_frames", 10_000)))
    return Agent(actor, TensorDictSequential(actor, noise), loss, _soft_update(cfg, loss), noise)


def _make_loss(cls: type, *args: Any, kwargs: Mapping[str, Any], **fixed: Any) -> nn.Module:
    accepted = set(inspect.signature(cls.__init__).parameters)
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        valid = sorted(accepted - _NOT_CONFIGURABLE - set(fixed))
        raise ValueError(f"loss.{unknown[0]} is not an argument of {cls.__name__} (the loss for this env's actions); "
                         f"its loss keys: {valid}")
    return cls(*args, **fixed, **kwargs)


def _conservative_agent(cfg: Mapping[str, Any], env: EnvBase) -> Agent:
    # CQL / IQL: continuous actions get the loss of ALGORITHMS (TanhNormal actor), one-hot actions the
    # discrete variant of OFFLINE (Q-values per action).
    algo, net_cfg, loss_cfg = cfg["algo"], cfg["network"], cfg["loss"]
    spec = env.action_spec
    n_obs = env.observation_spec["observation"].shape[-1]
    kwargs = _loss_kwargs(loss_cfg, ("gamma",))
    discrete = isinstance(spec, (OneHot, Categorical))
    if discrete and not isinstance(spec, OneHot):
        raise ValueError(f"algo={algo} supports one-hot discrete actions (GymEnv's default), got {type(spec).__name__}")
    n_act = spec.space.n if discrete else spec.shape[-1]
    policy: nn.Module
    if algo == "cql" and discrete:
        qnet = QValueActor(_mlp(n_obs, n_act, net_cfg), in_keys=["observation"], spec=spec)
        loss = _make_loss(DiscreteCQLLoss, qnet, kwargs=kwargs, action_space=spec)
        policy = qnet
    else:
        actor, critic = build_networks(env, net_cfg)
        policy = actor
        if discrete:
            qnet = ValueOperator(_mlp(n_obs, n_act, net_cfg), in_keys=["observation"], out_keys=["state_action_value"])
            loss = _make_loss(DiscreteIQLLoss, actor, qnet, critic, kwargs=kwargs, action_space=spec)
        else:
            qnet = ValueOperator(_mlp(n_obs + n_act, 1, net_cfg), in_keys=["observation", "action"])
            if algo == "cql":
                loss = _make_loss(CQLLoss, actor, qnet, kwargs=kwargs, action_spec=spec)
            else:
                loss = _make_loss(IQLLoss, actor, qnet, critic, kwargs=kwargs)
    loss.make_value_estimator(gamma=float(loss_cfg.get("gamma", 0.99)))
    exploration, collector_policy = None, policy
    if algo == "cql" and discrete:
        # Online discrete CQL explores like DQN; offline runs never use the collector policy.
        exp_cfg = cfg.get("exploration") or {}
        exploration = EGreedyModule(spec, eps_init=float(exp_cfg.get("eps_init", 1.0)),
                                    eps_end=float(exp_cfg.get("eps_end", 0.05)),
                                    annealing_num_steps=int(exp_cfg.get("annealing_frames", 10_000)))
        collector_policy = TensorDictSequential(policy, exploration)
    return Agent(policy, collector_policy, loss, _soft_update(cfg, loss), exploration)


def _soft_update(cfg: Mapping[str, Any], loss: nn.Module) -> SoftUpdate:
    return SoftUpdate(loss, tau=float((cfg.get("target") or {}).get("tau", 0.005)))


def build_trainer(cfg: Mapping[str, Any], *, env: EnvBase, agent: Agent, logger: Any = None,
                  save_file: Any = None) -> Any:
    """The collector, buffer, optimiser, LR schedule and algorithm trainer of a run."""
    if cfg["algo"] in OFF_POLICY:
        return _build_off_policy_trainer(cfg, env=env, agent=agent, logger=logger, save_file=save_file)
    algo, actor, loss = cfg["algo"], agent.collector_policy, agent.loss
    col_cfg, optim_cfg, tr_cfg, loss_cfg = cfg["collector"], cfg["optim"], cfg["trainer"], cfg["loss"]
    fpb = int(col_cfg["frames_per_batch"])
    total = int(col_cfg["total_frames"])
    minibatch = int(tr_cfg.get("minibatch_size", fpb))
    if fpb % minibatch:
        raise ValueError(f"trainer.minibatch_size ({minibatch}) must divide collector.frames_per_batch ({fpb})")
    collector = Collector(env, actor, frames_per_batch=fpb, total_frames=total)
    optimizer = torch.optim.Adam(loss.parameters(), lr=float(optim_cfg.get("lr", 3e-4)),
                                 weight_decay=float(optim_cfg.get("weight_decay", 0.0)))
    scheduler = None
    if optim_cfg.get("anneal_lr", False):
        scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1.0, end_factor=0.0,
                                                      total_iters=max(1, total // fpb))
    buffer = ReplayBuffer(storage=LazyTensorStorage(fpb), sampler=SamplerWithoutReplacement(), batch_size=minibatch)
    max_grad_norm = optim_cfg.get("max_grad_norm")
    trainer_cls = ALGORITHMS[algo][1]
    return trainer_cls(
        collector=collector, total_frames=total, frame_skip=1, optim_steps_per_batch=fpb // minibatch,
        loss_module=loss, optimizer=optimizer, lr_scheduler=scheduler, logger=logger,
        clip_grad_norm=max_grad_norm is not None, clip_norm=max_grad_norm,
        progress_bar=bool(tr_cfg.get("progress_bar", True)), seed=cfg.get("seed"),
        save_trainer_interval=int(tr_cfg.get("save_interval", 10 * fpb)),
        log_interval=int(tr_cfg.get("log_interval", 1)), save_trainer_file=save_file,
        num_epochs=int(tr_cfg.get("num_epochs", 1)), replay_buffer=buffer,
        gamma=float(loss_cfg.get("gamma", 0.99)), lmbda=float(loss_cfg.get("lmbda", 0.95)),
        episode_reward_key="episode_reward", log_actions=False,
        timing_print_interval=tr_cfg.get("timing_print_interval"),
    )


def _env_keys(env: EnvBase) -> list[Any]:
    # What a transition holds: env entries only. Random warm-up batches lack the policy's outputs (logits,
    # log-probs, action values), so storing those would make the buffer's keys change mid-run.
    state = list(env.observation_spec.keys(True, True)) + list(env.full_done_spec.keys(True, True))
    return [*state, "action", "collector", *[("next", k) for k in state],
            *[("next", k) for k in env.full_reward_spec.keys(True, True)]]


def _transition_keys(batch: Any, *, keys: list[Any]) -> Any:
    return batch.select(*keys, strict=False)


def is_offline(cfg: Mapping[str, Any]) -> bool:
    """Whether ``cfg`` describes an offline run (``algo=cql``/``iql`` with a ``dataset.path``)."""
    return cfg["algo"] in OFFLINE and bool((cfg.get("dataset") or {}).get("path"))


def _offline_buffer(cfg: Mapping[str, Any], env: EnvBase) -> Any:
    batch_size = int((cfg.get("replay") or {}).get("batch_size", 256))
    buffer = load_dataset(str(cfg["dataset"]["path"]), batch_size=batch_size)
    # A RewardSum's running return and gymnasium's truncation flag are stored by runs but never read by
    # the losses, so datasets written elsewhere need not hold them.
    check_dataset(buffer, env, ignore=("episode_reward", "truncated"))
    return buffer


def _td3_stepper(cfg: Mapping[str, Any], loss: Any) -> TD3OptimizationStepper:
    optim_cfg = cfg["optim"]
    kwargs = {"lr": float(optim_cfg.get("lr", 3e-4)), "weight_decay": float(optim_cfg.get("weight_decay", 0.0))}
    actor = torch.optim.Adam(list(loss.actor_network_params.values(True, True)), **kwargs)
    critic = torch.optim.Adam(list(loss.qvalue_network_params.values(True, True)), **kwargs)
    delay = int(cfg["trainer"].get("policy_update_delay", 2))
    return TD3OptimizationStepper(actor, critic, policy_update_delay=delay)


def _build_off_policy_trainer(cfg: Mapping[str, Any], *, env: EnvBase, agent: Agent, logger: Any,
                              save_file: Any) -> Any:
    col_cfg, optim_cfg, tr_cfg = cfg.get("collector") or {}, cfg["optim"], cfg["trainer"]
    rb_cfg = cfg.get("replay") or {}
    if is_offline(cfg):
        collector, total, fpb = None, None, int(tr_cfg.get("optim_steps_per_batch", 1000))
        buffer = _offline_buffer(cfg, env)
        extra: dict[str, Any] = {"gradient_steps": int(optim_cfg["gradient_steps"])}
    else:
        fpb, total = int(col_cfg["frames_per_batch"]), int(col_cfg["total_frames"])
        collector = Collector(env, agent.collector_policy, frames_per_batch=fpb, total_frames=total,
                              init_random_frames=int(rb_cfg.get("init_random_frames", 0)),
                              postproc=functools.partial(_transition_keys, keys=_env_keys(env)))
        buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(int(rb_cfg.get("buffer_size", 100_000))),
                                        batch_size=int(rb_cfg.get("batch_size", 256)))
        extra = {}
    optimizer = torch.optim.Adam(agent.loss.parameters(), lr=float(optim_cfg.get("lr", 3e-4)),
                                 weight_decay=float(optim_cfg.get("weight_decay", 0.0)))
    max_grad_norm = optim_cfg.get("max_grad_norm")
    if cfg["algo"] == "dqn" or cfg["algo"] == "cql" and collector is not None and agent.exploration is not None:
        extra["greedy_module" if cfg["algo"] == "dqn" else "exploration_module"] = agent.exploration
    if cfg["algo"] in DETERMINISTIC:
        extra["exploration_module"] = agent.exploration
    if cfg["algo"] == "td3":
        optimizer, extra["optimization_stepper"] = None, _td3_stepper(cfg, agent.loss)
    return ALGORITHMS[cfg["algo"]][1](
        collector=collector, total_frames=total, frame_skip=1,
        optim_steps_per_batch=int(tr_cfg.get("optim_steps_per_batch", fpb)), loss_module=agent.loss,
        optimizer=optimizer, logger=logger, clip_grad_norm=max_grad_norm is not None, clip_norm=max_grad_norm,
        progress_bar=bool(tr_cfg.get("progress_bar", True)), seed=cfg.get("seed"),
        save_trainer_interval=int(tr_cfg.get("save_interval", 10 * fpb)),
        log_interval=int(tr_cfg.get("log_interval", 1)), save_trainer_file=save_file, replay_buffer=buffer,
        target_net_updater=agent.target_updater, episode_reward_key="episode_reward", log_actions=False,
        timing_print_interval=tr_cfg.get("timing_print_interval"), **extra,
    )
