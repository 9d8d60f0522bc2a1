"""Builds the parts of a run from a validated config: env, networks (sizes from the env specs), loss, trainer.

A config composed against :class:`~tdrl.trainers.algorithms.configs.RunConfig` comes in (every value typed and
set, see :func:`~tdrl.trainers.algorithms.configs.compose_run_config`); every object is made here, so a
complete config for a new env is a few lines.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Mapping
from typing import Any

import torch
from omegaconf import OmegaConf
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from tdrl.collectors import BaseCollector, Collector
from tdrl.collectors.distributed import RayCollector
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
from tdrl.trainers.algorithms.configs.run import OFFLINE, ON_POLICY, EnvSection
from tdrl.trainers.datasets import check_dataset, load_dataset

__all__ = [
    "ACTIVATIONS",
    "ALGORITHMS",
    "Agent",
    "LOSSES",
    "build_agent",
    "build_collector",
    "build_env",
    "build_networks",
    "build_trainer",
    "is_offline",
]

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "gelu": nn.GELU}

#: algorithm -> its loss class (continuous actions; cql/iql take their discrete variant on one-hot envs). The keys
#: of their constructors that a config may set are listed in ``configs/loss_keys.py`` (validation runs without torch).
LOSSES: dict[str, type] = {
    "ppo": ClipPPOLoss, "a2c": A2CLoss, "reinforce": ReinforceLoss, "sac": SACLoss, "dqn": DQNLoss,
    "td3": TD3Loss, "ddpg": DDPGLoss, "cql": CQLLoss, "iql": IQLLoss,
}
#: algorithm name -> trainer class
ALGORITHMS: dict[str, type] = {
    "ppo": PPOTrainer, "a2c": A2CTrainer, "reinforce": ReinforceTrainer, "sac": SACTrainer, "dqn": DQNTrainer,
    "td3": TD3Trainer, "ddpg": DDPGTrainer, "cql": CQLTrainer, "iql": IQLTrainer,
}
#: off-policy algorithms with a deterministic actor explored by additive Gaussian noise
DETERMINISTIC = ("td3", "ddpg")
#: the discrete-action losses of the conservative algorithms (one-hot action envs)
_DISCRETE_LOSSES: dict[str, type] = {"cql": DiscreteCQLLoss, "iql": DiscreteIQLLoss}

# Keys of the ``loss`` section consumed by the value estimator rather than the loss constructor.
_ESTIMATOR_FIELDS = ("gamma", "lmbda")


def build_env(env_cfg: Mapping[str, Any], *, num_envs: int | None = None) -> EnvBase:
    """An env from its config (``name``, ``num_envs``, ``kwargs``), with a ``RewardSum`` for episode returns.

    ``pendulum`` is tdrl's pure-torch pendulum; ``dmc:DOMAIN/TASK`` (e.g. ``dmc:cheetah/run``) a dm_control
    task, its observations concatenated into ``"observation"``; anything else is a gymnasium id, vectorised
    with gymnasium's own vector env when ``num_envs > 1``. Double-precision entries (MuJoCo, dm_control)
    are cast to float32. Missing keys take :class:`~tdrl.trainers.algorithms.configs.run.EnvSection`'s defaults.

    Examples:
        >>> env = build_env({"name": "CartPole-v1", "num_envs": 2})
        >>> env.batch_size
        torch.Size([2])
        >>> env.close()
    """
    section = OmegaConf.merge(OmegaConf.structured(EnvSection), env_cfg)
    n = int(section.num_envs if num_envs is None else num_envs)
    if n < 1:
        raise ValueError(f"env.num_envs must be >= 1, got {n}")
    name = str(section.name)
    kwargs = dict(section.kwargs)
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


def _mlp(n_in: int, n_out: int, net_cfg: Any) -> MLP:
    return MLP(in_features=n_in, out_features=n_out, num_cells=list(net_cfg.num_cells),
               activation_class=ACTIVATIONS[net_cfg.activation])


def build_networks(env: EnvBase, net_cfg: Any) -> tuple[ProbabilisticActor, ValueOperator]:
    """A stochastic actor and a state-value critic sized from ``env``'s specs (``net_cfg``: a ``network`` section).

    Discrete actions (``OneHot``) get a categorical policy; continuous ones a ``TanhNormal`` bounded by the
    action spec.
    """
    obs_spec = env.observation_spec["observation"]
    n_obs = obs_spec.shape[-1]
    action_spec = env.action_spec
    if isinstance(action_spec, Categorical):
        raise ValueError("categorical (integer) action specs are not supported by the preset builder; "
                         "use a one-hot action env (GymEnv's default)")
    if isinstance(action_spec, OneHot):
        n_act = action_spec.space.n
        module = TensorDictModule(_mlp(n_obs, n_act, net_cfg), ["observation"], ["logits"])
        actor = ProbabilisticActor(module, in_keys=["logits"], distribution_class=OneHotCategorical,
                                   spec=action_spec, return_log_prob=True)
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


def _loss_kwargs(loss_cfg: Any, drop: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in loss_cfg.items() if k not in drop}


def _gamma(cfg: Any) -> float:
    # the loss section's gamma, else the value estimator's usual 0.99
    return float(cfg.loss.get("gamma") or 0.99)


def _egreedy(cfg: Any, spec: Any) -> EGreedyModule:
    exp = cfg.exploration
    return EGreedyModule(spec, eps_init=exp.eps_init, eps_end=exp.eps_end, annealing_num_steps=exp.annealing_frames)


def build_agent(cfg: Any, env: EnvBase) -> Agent:
    """Networks sized from ``env``'s specs, the loss of ``cfg.algo`` and its target updater/exploration."""
    algo, net_cfg, loss_cfg = cfg.algo, cfg.network, cfg.loss
    n_obs = env.observation_spec["observation"].shape[-1]
    if algo == "dqn":
        if not isinstance(env.action_spec, OneHot):
            raise ValueError("algo=dqn needs a discrete (one-hot) action env such as CartPole-v1")
        qnet = QValueActor(_mlp(n_obs, env.action_spec.space.n, net_cfg), in_keys=["observation"], spec=env.action_spec)
        greedy = _egreedy(cfg, env.action_spec)
        loss = DQNLoss(qnet, action_space=env.action_spec, delay_value=True, **_loss_kwargs(loss_cfg, ("gamma",)))
        loss.make_value_estimator(gamma=_gamma(cfg))
        return Agent(qnet, TensorDictSequential(qnet, greedy), loss, _soft_update(cfg, loss), greedy)
    if algo in DETERMINISTIC:
        return _deterministic_agent(cfg, env)
    if algo in _DISCRETE_LOSSES:
        return _conservative_agent(cfg, env)
    actor, critic = build_networks(env, net_cfg)
    if algo == "sac":
        n_act = env.action_spec.shape[-1]
        qnet = ValueOperator(_mlp(n_obs + n_act, 1, net_cfg), in_keys=["observation", "action"])
        loss = SACLoss(actor, qnet, action_spec=env.action_spec, **_loss_kwargs(loss_cfg, ("gamma",)))
        loss.make_value_estimator(gamma=_gamma(cfg))
        return Agent(actor, actor, loss, _soft_update(cfg, loss))
    loss = LOSSES[algo](actor, critic, **_loss_kwargs(loss_cfg, _ESTIMATOR_FIELDS))
    return Agent(actor, actor, loss)


def _deterministic_agent(cfg: Any, env: EnvBase) -> Agent:
    # TD3/DDPG: a tanh-bounded deterministic actor, a Q(s, a) critic and annealed Gaussian action noise.
    algo, net_cfg = cfg.algo, cfg.network
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
    kwargs = _loss_kwargs(cfg.loss, ("gamma",))
    if algo == "td3":
        loss: nn.Module = TD3Loss(actor, qnet, action_spec=spec, **kwargs)
    else:
        loss = DDPGLoss(actor, qnet, **kwargs)
    loss.make_value_estimator(gamma=_gamma(cfg))
    exp = cfg.exploration
    noise = AdditiveGaussianModule(spec, sigma_init=exp.sigma_init, sigma_end=exp.sigma_end,
                                   annealing_num_steps=exp.annealing_frames)
    return Agent(actor, TensorDictSequential(actor, noise), loss, _soft_update(cfg, loss), noise)


def _make_loss(cls: type, *args: Any, kwargs: Mapping[str, Any], **fixed: Any) -> nn.Module:
    # The loss section was checked against the continuous loss's arguments; its discrete variant may take fewer.
    accepted = set(inspect.signature(cls.__init__).parameters)
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        valid = sorted(accepted - {"self", "kwargs"} - set(fixed) - {"actor_network", "qvalue_network",
                                                                    "value_network", "delay_value"})
        raise ValueError(f"loss.{unknown[0]} is not an argument of {cls.__name__} (the loss for this env's actions); "
                         f"its loss keys: {valid}")
    return cls(*args, **fixed, **kwargs)


def _conservative_agent(cfg: Any, env: EnvBase) -> Agent:
    # CQL / IQL: continuous actions get the loss of LOSSES (TanhNormal actor), one-hot actions the discrete
    # variant (Q-values per action).
    algo, net_cfg = cfg.algo, cfg.network
    spec = env.action_spec
    n_obs = env.observation_spec["observation"].shape[-1]
    kwargs = _loss_kwargs(cfg.loss, ("gamma",))
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
    loss.make_value_estimator(gamma=_gamma(cfg))
    exploration, collector_policy = None, policy
    if algo == "cql" and discrete:
        # Online discrete CQL explores like DQN; offline runs never use the collector policy.
        exploration = _egreedy(cfg, spec)
        collector_policy = TensorDictSequential(policy, exploration)
    return Agent(policy, collector_policy, loss, _soft_update(cfg, loss), exploration)


def _soft_update(cfg: Any, loss: nn.Module) -> SoftUpdate:
    return SoftUpdate(loss, tau=cfg.target.tau)


def _adam(cfg: Any, params: Any) -> torch.optim.Adam:
    params = list(params)
    # The fused kernel updates every tensor in one call: on the small networks of the presets it costs a third
    # of the per-tensor loop torch runs by default on CPU (benchmarks/loop). It needs floating CPU/CUDA tensors.
    fused = bool(params) and all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params)
    return torch.optim.Adam(params, lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay, fused=fused or None)


def _common_trainer_kwargs(cfg: Any, logger: Any, save_file: Any) -> dict[str, Any]:
    tr, max_grad_norm = cfg.trainer, cfg.optim.max_grad_norm
    return {"frame_skip": 1, "logger": logger, "clip_grad_norm": max_grad_norm is not None, "clip_norm": max_grad_norm,
            "progress_bar": tr.progress_bar, "seed": cfg.seed, "save_trainer_interval": tr.save_interval,
            "log_interval": tr.log_interval, "save_trainer_file": save_file, "episode_reward_key": "episode_reward",
            "log_actions": False, "timing_print_interval": tr.timing_print_interval}


def build_collector(cfg: Any, env: EnvBase, policy: nn.Module, **kwargs: Any) -> BaseCollector:
    """The run's collector: a :class:`~tdrl.collectors.Collector` on ``env``, or with ``collector.backend=ray``
    a :class:`~tdrl.collectors.distributed.RayCollector` whose actors each build the env from ``cfg.env``.

    On-policy runs gather one batch from every actor with the latest weights (``sync``); off-policy runs take
    batches as they come. Weights are pushed before each batch (``update_after_each_batch``).
    """
    section = cfg.collector
    if section.get("backend", "local") != "ray":
        return Collector(env, policy, frames_per_batch=section.frames_per_batch, total_frames=section.total_frames,
                         **kwargs)
    env.close()  # the actors build their own envs; this one only gave its specs
    ray_cfg = cfg.ray
    return RayCollector(
        functools.partial(build_env, OmegaConf.to_container(cfg.env, resolve=True)), policy,
        num_collectors=section.num_collectors, frames_per_batch=section.frames_per_batch,
        total_frames=section.total_frames, sync=cfg.algo in ON_POLICY, update_after_each_batch=True,
        ray_init_config={"address": ray_cfg.address, "include_dashboard": False, "log_to_driver": False},
        remote_configs={"num_cpus": ray_cfg.num_cpus_per_collector, "max_restarts": ray_cfg.max_restarts},
        timeout=ray_cfg.timeout, **kwargs,
    )


def build_trainer(cfg: Any, *, env: EnvBase, agent: Agent, logger: Any = None, save_file: Any = None) -> Any:
    """The collector, buffer, optimiser, LR schedule and algorithm trainer of a composed run config."""
    if cfg.algo not in ON_POLICY:
        return _build_off_policy_trainer(cfg, env=env, agent=agent, logger=logger, save_file=save_file)
    minibatch = cfg.trainer.minibatch_size
    collector = build_collector(cfg, env, agent.collector_policy)
    # The collector's own count: it rounds frames_per_batch up to a multiple of the envs (the config
    # validator refuses such configs; a config built by hand still gets a buffer that holds a whole batch).
    fpb = collector.requested_frames_per_batch
    optimizer = _adam(cfg, agent.loss.parameters())
    scheduler = None
    if cfg.optim.anneal_lr:
        scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1.0, end_factor=0.0,
                                                      total_iters=max(1, cfg.collector.total_frames // fpb))
    buffer = ReplayBuffer(storage=LazyTensorStorage(fpb), sampler=SamplerWithoutReplacement(), batch_size=minibatch)
    return ALGORITHMS[cfg.algo](
        collector=collector, total_frames=cfg.collector.total_frames, optim_steps_per_batch=fpb // minibatch,
        loss_module=agent.loss, optimizer=optimizer, lr_scheduler=scheduler, num_epochs=cfg.trainer.num_epochs,
        replay_buffer=buffer, gamma=float(cfg.loss.get("gamma", 0.99)), lmbda=float(cfg.loss.get("lmbda", 0.95)),
        **_common_trainer_kwargs(cfg, logger, save_file),
    )


def _env_keys(env: EnvBase) -> list[Any]:
    # What a transition holds: env entries only. Random warm-up batches lack the policy's outputs (logits,
    # log-probs, action values), so storing those would make the buffer's keys change mid-run.
    state = list(env.observation_spec.keys(True, True)) + list(env.full_done_spec.keys(True, True))
    return [*state, "action", "collector", *[("next", k) for k in state],
            *[("next", k) for k in env.full_reward_spec.keys(True, True)]]


def _transition_keys(batch: Any, *, keys: list[Any]) -> Any:
    return batch.select(*keys, strict=False)


def is_offline(cfg: Any) -> bool:
    """Whether ``cfg`` describes an offline run (``algo=cql``/``iql`` with a ``dataset.path``)."""
    return cfg.algo in OFFLINE and cfg.get("dataset") is not None and bool(cfg.dataset.path)


def _offline_buffer(cfg: Any, env: EnvBase) -> Any:
    buffer = load_dataset(str(cfg.dataset.path), batch_size=cfg.replay.batch_size)
    # A RewardSum's running return and gymnasium's truncation flag are stored by runs but never read by
    # the losses, so datasets written elsewhere need not hold them.
    check_dataset(buffer, env, ignore=("episode_reward", "truncated"))
    return buffer


def _td3_stepper(cfg: Any, loss: Any) -> TD3OptimizationStepper:
    actor = _adam(cfg, list(loss.actor_network_params.values(True, True)))
    critic = _adam(cfg, list(loss.qvalue_network_params.values(True, True)))
    return TD3OptimizationStepper(actor, critic, policy_update_delay=cfg.trainer.policy_update_delay)


def _build_off_policy_trainer(cfg: Any, *, env: EnvBase, agent: Agent, logger: Any, save_file: Any) -> Any:
    rb = cfg.replay
    extra: dict[str, Any] = {}
    if is_offline(cfg):
        collector, total, buffer = None, None, _offline_buffer(cfg, env)
        extra["gradient_steps"] = cfg.optim.gradient_steps
    else:
        total = cfg.collector.total_frames
        collector = build_collector(cfg, env, agent.collector_policy, init_random_frames=rb.init_random_frames,
                                    postproc=functools.partial(_transition_keys, keys=_env_keys(env)))
        buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(rb.buffer_size), batch_size=rb.batch_size)
    optimizer: Any = _adam(cfg, agent.loss.parameters())
    algo = cfg.algo
    if algo == "dqn" or algo == "cql" and collector is not None and agent.exploration is not None:
        extra["greedy_module" if algo == "dqn" else "exploration_module"] = agent.exploration
    if algo in DETERMINISTIC:
        extra["exploration_module"] = agent.exploration
    if algo == "td3":
        optimizer, extra["optimization_stepper"] = None, _td3_stepper(cfg, agent.loss)
    return ALGORITHMS[algo](
        collector=collector, total_frames=total, optim_steps_per_batch=cfg.trainer.optim_steps_per_batch,
        loss_module=agent.loss, optimizer=optimizer, replay_buffer=buffer, target_net_updater=agent.target_updater,
        **_common_trainer_kwargs(cfg, logger, save_file), **extra,
    )
