"""The structured config of a ``tdrl train`` run: every key, its type, default, range and help.

A preset (``src/tdrl/trainers/presets/*.yaml``) and the ``config.yaml`` of a run folder are YAML files merged
onto :class:`RunConfig`; ``key=value`` overrides are merged the same way, so OmegaConf checks each key and
type, and :mod:`~tdrl.trainers.algorithms.configs.presets` adds the ranges (``metadata["min"]``/``"choices"``)
and the cross-key rules. A value of ``None`` in a field documented as *derived* is filled by
:func:`~tdrl.trainers.algorithms.configs.presets.resolve_derived` when the config is composed, so the
``config.yaml`` of a run holds every value the builder reads.

The ``loss`` section is typed by the loss config of the algorithm (``loss/<algo>`` in Hydra's ConfigStore,
e.g. :class:`~tdrl.trainers.algorithms.configs.PPOLossConfig`): its keys are that config's fields minus the
networks and keys the builder sets, plus the value estimator's ``gamma`` (and ``lmbda`` on-policy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

__all__ = [
    "ALGORITHMS", "CollectorSection", "DatasetSection", "EnvSection", "EvalSection", "ExplorationSection",
    "LoggerSection", "NetworkSection", "OFFLINE", "OFF_POLICY", "ON_POLICY", "OptimSection", "RaySection", "ReplaySection",
    "RunConfig", "TargetSection", "TrainerSection",
]

#: on-policy algorithms: GAE on each batch, epochs of minibatches from a buffer of one batch
ON_POLICY = ("ppo", "a2c", "reinforce")
#: algorithms that learn from a replay buffer (they take the ``replay``/``target``/``exploration`` sections)
OFF_POLICY = ("sac", "dqn", "td3", "ddpg", "cql", "iql")
#: algorithms that can also learn offline from a dataset (``dataset.path``)
OFFLINE = ("cql", "iql")
#: every algorithm ``tdrl train algo=...`` knows
ALGORITHMS = ON_POLICY + OFF_POLICY


def _f(default: Any = MISSING, help: str = "", **meta: Any) -> Any:  # noqa: A002 - the usual name for it
    """A dataclass field with a help text and range metadata (``min``, ``max``, ``choices``)."""
    if isinstance(default, (list, dict)):
        value = default
        return field(default_factory=lambda: type(value)(value), metadata={"help": help, **meta})
    return field(default=default, metadata={"help": help, **meta})


@dataclass
class EnvSection:
    """The environment: a gymnasium id, ``pendulum`` (tdrl's pure-torch pendulum) or ``dmc:DOMAIN/TASK``."""

    name: str = _f(help="gymnasium id (CartPole-v1), 'pendulum' or dmc:DOMAIN/TASK; `env=NAME` sets it")
    num_envs: int = _f(1, "copies of the env stepped side by side (gymnasium's vector env)", min=1)
    kwargs: dict[str, Any] = _f({}, "keyword arguments of the env constructor")


@dataclass
class NetworkSection:
    """The MLPs of the actor and critics (sized from the env specs)."""

    num_cells: list[int] = _f([64, 64], "hidden layer widths")
    activation: str = _f("tanh", "hidden activation", choices=("tanh", "relu", "elu", "gelu"))


@dataclass
class CollectorSection:
    """What the collector gathers (online runs only)."""

    frames_per_batch: int = _f(help="frames per collected batch (a multiple of env.num_envs)", min=1)
    total_frames: int = _f(help="frames to collect before the run ends", min=1)
    backend: str = _f("local", "where the env steps: in this process, or in Ray actors (`collector=ray`)",
                      choices=("local", "ray"))
    num_collectors: int = _f(1, "Ray collector actors (collector=ray); frames_per_batch is split over them", min=1)


@dataclass
class RaySection:
    """Where ``collector=ray`` runs its collector actors (see docs/distributed.md)."""

    address: str | None = _f(None, "Ray to join: null starts a local Ray, 'auto' the cluster of this machine's "
                                   "`ray start`, or HOST:PORT of a head node")
    num_cpus_per_collector: float = _f(1.0, "CPUs Ray reserves for each collector actor", min=0.0)
    max_restarts: int = _f(0, "times a dead collector actor is replaced (-1: always)", min=-1)
    timeout: float = _f(600.0, "seconds to wait for a batch before the run fails (never hangs)", min=1.0)


@dataclass
class OptimSection:
    """The Adam optimiser."""

    lr: float = _f(3e-4, "learning rate", min=0.0)
    anneal_lr: bool = _f(False, "decay the learning rate linearly to 0 over the run (on-policy)")
    max_grad_norm: float | None = _f(None, "clip the gradient norm to this (null: no clipping)", min=0.0)
    weight_decay: float = _f(0.0, "Adam's weight decay", min=0.0)
    gradient_steps: int | None = _f(None, "length of an offline run in gradient steps (cql/iql with dataset.path)",
                                    min=1)


@dataclass
class TrainerSection:
    """The training loop; ``None`` marks a value derived when the config is composed."""

    num_epochs: int | None = _f(None, "passes over each batch (on-policy; derived: 1)", min=1)
    minibatch_size: int | None = _f(None, "minibatch size, dividing frames_per_batch (on-policy; derived: "
                                          "collector.frames_per_batch)", min=1)
    optim_steps_per_batch: int | None = _f(None, "gradient steps per batch (off-policy; derived: frames_per_batch "
                                                 "online, 1000 offline)", min=1)
    save_interval: int | None = _f(None, "frames between checkpoints (derived: 10 batches)", min=1)
    log_interval: int = _f(1, "frames between two writes of one scalar", min=0)
    progress_bar: bool = _f(True, "show a tqdm progress bar")
    timing_print_interval: int | None = _f(None, "frames between printed timing tables (null: never)", min=1)
    log_timings: bool = _f(True, "log time/trainer/<phase> scalars")
    policy_update_delay: int | None = _f(None, "TD3's delayed actor update (td3 only; derived: 2)", min=1)
    world_size: int = _f(1, "data-parallel learner processes; collector/minibatch/replay sizes stay global and are "
                            "split between them (docs/distributed.md)", min=1)
    dist_backend: str | None = _f(None, "torch.distributed backend of world_size > 1 (null: nccl with CUDA, else gloo)",
                                  choices=("gloo", "nccl", None))


@dataclass
class EvalSection:
    """Deterministic evaluation of the policy: periodic during training, and at the end."""

    episodes: int = _f(10, "episodes of the final evaluation", min=1)
    max_steps: int = _f(1000, "steps per evaluation episode at most", min=1)
    interval: int = _f(0, "frames between periodic evaluations that keep the best policy in best.pt (0: none)",
                       min=0)
    interval_episodes: int = _f(3, "episodes of each periodic evaluation", min=1)


@dataclass
class LoggerSection:
    """Where scalars go besides ``logs/`` (CSV, always)."""

    tensorboard: bool = _f(True, "also write TensorBoard events when tensorboard is installed")


@dataclass
class ReplaySection:
    """The replay buffer of off-policy runs."""

    buffer_size: int = _f(100_000, "capacity in transitions", min=1)
    batch_size: int = _f(256, "transitions per gradient step", min=1)
    init_random_frames: int = _f(0, "frames of random actions before learning starts", min=0)


@dataclass
class TargetSection:
    """Target networks of off-policy runs."""

    tau: float = _f(0.005, "soft-update rate of the target networks", min=0.0, max=1.0)


@dataclass
class ExplorationSection:
    """Exploration of off-policy runs: epsilon-greedy (dqn, online cql) or Gaussian noise (td3, ddpg)."""

    eps_init: float = _f(1.0, "initial epsilon", min=0.0, max=1.0)
    eps_end: float = _f(0.05, "final epsilon", min=0.0, max=1.0)
    sigma_init: float = _f(0.1, "initial action-noise scale", min=0.0)
    sigma_end: float = _f(0.1, "final action-noise scale", min=0.0)
    annealing_frames: int = _f(10_000, "frames over which epsilon/sigma are annealed", min=1)


@dataclass
class DatasetSection:
    """The dataset of an offline run (cql/iql)."""

    path: str | None = _f(None, "a run folder of an off-policy run, or a ReplayBuffer.dumps folder")


@dataclass
class RunConfig:
    """A ``tdrl train`` run. Sections not used by ``algo`` stay ``None`` (``replay``/``target``/``exploration``
    for off-policy algorithms, ``dataset`` for cql/iql, ``collector`` for online runs).

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.merge(OmegaConf.structured(RunConfig), {"env": {"name": "CartPole-v1"}})
        >>> cfg.algo, cfg.env.num_envs, cfg.optim.lr
        ('ppo', 1, 0.0003)
    """

    algo: str = _f("ppo", "the algorithm", choices=ALGORITHMS)
    seed: int | None = _f(0, "seed of torch, numpy, python and the envs (null: unseeded)")
    num_threads: int | None = _f(None, "torch threads (null: torch's default)", min=1)
    run_dir: str | None = _f(None, "the run folder (null: runs/<algo>-<env>-<UTC time>)")
    env: EnvSection = field(default_factory=EnvSection)
    network: NetworkSection = field(default_factory=NetworkSection)
    collector: CollectorSection | None = None
    optim: OptimSection = field(default_factory=OptimSection)
    loss: dict[str, Any] = _f({}, "arguments of the algorithm's loss (see loss/<algo> configs), gamma, lmbda")
    trainer: TrainerSection = field(default_factory=TrainerSection)
    eval: EvalSection = field(default_factory=EvalSection)
    logger: LoggerSection = field(default_factory=LoggerSection)
    ray: RaySection = field(default_factory=RaySection)
    replay: ReplaySection | None = None
    target: TargetSection | None = None
    exploration: ExplorationSection | None = None
    dataset: DatasetSection | None = None
