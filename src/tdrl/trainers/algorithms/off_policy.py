"""Shared wiring of the replay-buffer trainers (SAC, TD3, DDPG, DQN, CQL, IQL)."""

from __future__ import annotations

import functools
import pathlib
from collections.abc import Iterator
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey
from torch import optim

from tdrl._utils import timeit
from tdrl.trainers.hooks import (
    LogScalar,
    OptimizationStepper,
    ReplayBufferTrainer,
    TargetNetUpdaterHook,
    TrainerHookBase,
    UpdateWeights,
)
from tdrl.trainers.trainer import HookPoint, LossAverage, Trainer

__all__ = ["ExplorationAnnealer", "OffPolicyTrainer", "OfflineSteps"]


class OfflineSteps:
    """Stands in for the collector of an offline run: it yields the gradient steps to take, not data.

    Each item is an empty TensorDict whose batch size is the number of optimisation steps of that loop
    iteration (``steps_per_batch``, fewer for the last one), so the trainer's frame counter counts
    gradient steps and its intervals (checkpoints, logging, evaluation) are in gradient steps.

    Examples:
        >>> class T: collected_frames, total_frames = 0, 5
        >>> steps = OfflineSteps(2)
        >>> steps.trainer = T()
        >>> next(iter(steps)).batch_size
        torch.Size([2])
    """

    init_random_frames = 0
    policy = None

    def __init__(self, steps_per_batch: int) -> None:
        if steps_per_batch < 1:
            raise ValueError(f"offline runs need optim_steps_per_batch >= 1, got {steps_per_batch}")
        self.steps_per_batch = steps_per_batch
        self.trainer: Any = None

    def __iter__(self) -> Iterator[TensorDictBase]:
        while True:
            left = self.trainer.total_frames - self.trainer.collected_frames
            yield TensorDict({}, batch_size=[max(0, min(self.steps_per_batch, left))])

    def set_seed(self, seed: int | None, static_seed: bool = False) -> int | None:
        return seed

    def shutdown(self) -> None:
        """Nothing to release."""


class ExplorationAnnealer(TrainerHookBase):
    """Advances an exploration module's annealing (``module.step(frames)``) by the frames of each batch.

    Examples:
        >>> class Eps:
        ...     seen = 0
        ...     def step(self, frames): self.seen += frames
        >>> class T: collected_frames = 0
        >>> hook, trainer = ExplorationAnnealer(Eps()), T()
        >>> hook.attach(trainer)
        >>> trainer.collected_frames = 100
        >>> hook()
        >>> hook.module.seen
        100
    """

    def __init__(self, module: Any) -> None:
        self.module = module
        self._last_frames = 0
        self._trainer: Any = None

    def __call__(self) -> None:
        delta = self._trainer.collected_frames - self._last_frames
        if delta > 0:
            self.module.step(delta)
            self._last_frames = self._trainer.collected_frames

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"last_frames": self._last_frames}
        if isinstance(self.module, torch.nn.Module):
            state["module"] = self.module.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._last_frames = state_dict["last_frames"]
        if "module" in state_dict:
            self.module.load_state_dict(state_dict["module"])

    def attach(self, trainer: Trainer) -> None:
        """Follows ``trainer``'s frame counter (as registered)."""
        self._trainer = trainer

    def register(self, trainer: Trainer, name: str = "exploration_annealer") -> None:
        self.attach(trainer)
        trainer.register_op("post_steps", self)
        trainer.register_module(name, self)


class OffPolicyTrainer(Trainer):
    """A :class:`~tdrl.trainers.Trainer` that learns from a replay buffer.

    Each collected batch is flattened into ``replay_buffer``; every optimisation step samples a batch from
    it (``batch_size`` or the buffer's own) and updates priorities after the loss; the target networks
    are updated after every optimiser step; the collector's policy (actor, followed by the exploration
    module when given) gets the new weights after each batch.

    Unlike TorchRL 0.14.1, which iterates over the buffer (``iterate=True``) and extends it before each
    epoch, sampling here is i.i.d. from the whole buffer, the usual replay semantics.

    Offline mode (a tdrl extension; TorchRL's trainers are online only): ``collector=None`` with a
    pre-filled ``replay_buffer`` (a dataset) and ``gradient_steps`` (the name of TorchRL's offline
    ``optim.gradient_steps``). The trainer then takes ``gradient_steps`` optimisation steps in loop
    iterations of ``optim_steps_per_batch`` steps; its frame counter (``collected_frames``) counts
    gradient steps, so ``save_trainer_interval``, ``log_interval`` and evaluation hooks such as
    ``LogValidationReward`` run every so many gradient steps. The buffer is only sampled, never extended,
    and is not written to checkpoints (it is a fixed dataset: rebuild it before ``load_from_file``).

    Args:
        collector: the collector (``None``: offline mode).
        total_frames: frames to collect (online only).
        gradient_steps: optimisation steps of an offline run (offline only).
        frame_skip, optim_steps_per_batch, loss_module, optimizer: as in :class:`~tdrl.trainers.Trainer`;
            so are ``optimization_stepper``, ``logger``, ``clip_grad_norm``, ``clip_norm``, ``progress_bar``,
            ``seed``, ``save_trainer_interval``, ``log_interval``, ``save_trainer_file``, ``num_epochs``,
            ``log_timings``, ``auto_log_optim_steps`` and ``timing_print_interval``.
        replay_buffer: the buffer (required).
        batch_size: sample size (``None``: the buffer's).
        target_net_updater: a ``SoftUpdate``/``HardUpdate`` of the loss.
        exploration_module: annealed by the collected frames (e.g. ``EGreedyModule``, ``OrnsteinUhlenbeckProcessModule``).
        enable_logging, log_rewards, log_actions, log_observations: which statistics to log.
        done_key, terminated_key, reward_key, episode_reward_key, action_key, observation_key: tensordict keys.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule, TensorDictSequential
        >>> from tdrl.collectors import Collector
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import MLP, TanhModule, ValueOperator
        >>> from tdrl.objectives import DDPGLoss, SoftUpdate
        >>> env = GymEnv("Pendulum-v1")
        >>> actor = TensorDictSequential(TensorDictModule(torch.nn.Linear(3, 1), ["observation"], ["param"]),
        ...                              TanhModule(["param"], ["action"], spec=env.action_spec))
        >>> loss = DDPGLoss(actor, ValueOperator(MLP(in_features=4, out_features=1, num_cells=[8]),
        ...                                      in_keys=["observation", "action"]))
        >>> trainer = OffPolicyTrainer(collector=Collector(env, actor, frames_per_batch=16, total_frames=32),
        ...     total_frames=32, optim_steps_per_batch=2, loss_module=loss, optimizer=torch.optim.Adam(loss.parameters()),
        ...     target_net_updater=SoftUpdate(loss, tau=0.05), progress_bar=False,
        ...     replay_buffer=ReplayBuffer(storage=LazyTensorStorage(100), batch_size=8))
        >>> trainer.train()  # per batch: extend the buffer, then 2 sampled updates, each followed by the target update
        >>> trainer.collected_frames, trainer.optim_count
        (32, 4)
    """

    _algo_name = "off-policy"
    _requires_target_updater = False

    def __init__(
        self,
        *,
        collector: Any = None,
        total_frames: int | None = None,
        frame_skip: int = 1,
        optim_steps_per_batch: int,
        loss_module: Any,
        optimizer: optim.Optimizer | None = None,
        optimization_stepper: OptimizationStepper | None = None,
        logger: Any = None,
        clip_grad_norm: bool = True,
        clip_norm: float | None = None,
        progress_bar: bool = True,
        seed: int | None = None,
        save_trainer_interval: int = 10000,
        log_interval: int = 10000,
        save_trainer_file: str | pathlib.Path | None = None,
        num_epochs: int = 1,
        replay_buffer: Any = None,
        batch_size: int | None = None,
        enable_logging: bool = True,
        log_rewards: bool = True,
        log_actions: bool = True,
        log_observations: bool = False,
        target_net_updater: Any = None,
        exploration_module: Any = None,
        async_collection: bool = False,
        log_timings: bool = False,
        auto_log_optim_steps: bool = True,
        done_key: NestedKey = "done",
        terminated_key: NestedKey = "terminated",
        reward_key: NestedKey = "reward",
        episode_reward_key: NestedKey = "reward_sum",
        action_key: NestedKey = "action",
        observation_key: NestedKey = "observation",
        timing_print_interval: int | None = None,
        gradient_steps: int | None = None,
    ) -> None:
        if replay_buffer is None:
            raise ValueError(f"{type(self).__name__} needs a replay_buffer")
        if self._requires_target_updater and target_net_updater is None:
            raise ValueError(f"{type(self).__name__} requires a target_net_updater (SoftUpdate or HardUpdate)")
        self.offline = collector is None
        if self.offline:
            self._progress_unit = "steps"
            collector, total_frames = self._offline_source(replay_buffer, total_frames, gradient_steps,
                                                           optim_steps_per_batch)
        elif gradient_steps is not None:
            raise ValueError(f"{type(self).__name__}: gradient_steps is for offline runs (collector=None); "
                             "an online run stops at total_frames")
        super().__init__(
            collector=collector, total_frames=total_frames, frame_skip=frame_skip,
            optim_steps_per_batch=optim_steps_per_batch, loss_module=loss_module, optimizer=optimizer,
            optimization_stepper=optimization_stepper, replay_buffer=replay_buffer,
            target_net_updater=target_net_updater, batch_size=batch_size, logger=logger,
            clip_grad_norm=clip_grad_norm, clip_norm=clip_norm, progress_bar=progress_bar, seed=seed,
            save_trainer_interval=save_trainer_interval, log_interval=log_interval,
            save_trainer_file=save_trainer_file, num_epochs=num_epochs, async_collection=async_collection,
            log_timings=log_timings, auto_log_optim_steps=auto_log_optim_steps,
            timing_print_interval=timing_print_interval,
        )
        # The parts of the explicit step (see step()): each kept as a checkpointed module, none a hook.
        self.replay = ReplayBufferTrainer(replay_buffer, batch_size=batch_size, flatten_tensordicts=True)
        if self.offline:
            collector.trainer = self
        else:  # an offline dataset is fixed: it is rebuilt, not checkpointed
            self.register_module("replay_buffer", self.replay)
        self.target_net_updater_hook = (None if target_net_updater is None
                                        else self._target_update_hook(target_net_updater))
        self.exploration_module = exploration_module
        self.exploration_annealer = self._setup_annealer(exploration_module)
        self.update_weights = self._setup_weight_updates(collector, loss_module)
        if hasattr(loss_module, "set_keys"):
            loss_module.set_keys(reward=reward_key, done=done_key, terminated=terminated_key)
        self.done_key, self.terminated_key, self.reward_key = done_key, terminated_key, reward_key
        self.episode_reward_key, self.action_key, self.observation_key = episode_reward_key, action_key, observation_key
        self.enable_logging, self.log_rewards = enable_logging, log_rewards
        self.log_actions, self.log_observations = log_actions, log_observations
        if enable_logging and not self.offline:
            self._setup_logging()

    def _setup_annealer(self, exploration_module: Any) -> ExplorationAnnealer | None:
        """Anneals an exploration module with a ``step`` (e.g. epsilon-greedy) once per collected batch."""
        if exploration_module is None or not hasattr(exploration_module, "step"):
            return None
        annealer = ExplorationAnnealer(exploration_module)
        annealer.attach(self)
        self.register_module("exploration_annealer", annealer)
        return annealer

    def _setup_weight_updates(self, collector: Any, loss_module: Any) -> UpdateWeights | None:
        """Pushes the trained policy's weights to the collector after each batch (when it holds a module)."""
        actor = self._policy_network(loss_module)
        if actor is None or not isinstance(getattr(collector, "policy", None), torch.nn.Module):
            return None
        getter = functools.partial(self._policy_weights, actor)
        return UpdateWeights(collector, 1, policy_weights_getter=getter)

    def _offline_source(self, replay_buffer: Any, total_frames: int | None, gradient_steps: int | None,
                        optim_steps_per_batch: int) -> tuple[OfflineSteps, int]:
        name = type(self).__name__
        if total_frames is not None:
            raise ValueError(f"{name}: total_frames counts collected frames; an offline run (collector=None) "
                             "takes gradient_steps=N instead")
        if gradient_steps is None or int(gradient_steps) < 1:
            raise ValueError(f"{name}: an offline run (collector=None) needs gradient_steps >= 1, got {gradient_steps!r}")
        if len(replay_buffer) == 0:
            raise ValueError(f"{name}: an offline run (collector=None) learns from a pre-filled replay_buffer, "
                             "and this one is empty")
        return OfflineSteps(int(optim_steps_per_batch)), int(gradient_steps)

    def _target_update_hook(self, target_net_updater: Any) -> TargetNetUpdaterHook:
        return TargetNetUpdaterHook(target_net_updater)

    @property
    def gradient_steps(self) -> int | None:
        """The optimisation steps of an offline run (``None`` online)."""
        return self.total_frames if self.offline else None

    def step(self, batch: TensorDictBase | None) -> int:
        """One off-policy iteration on a collected batch, top to bottom.

        Hook points (:class:`~tdrl.trainers.trainer.HookPoint`) run where their names say; the algorithm's
        own parts are called here, in this order, whatever was registered. Offline, the "batch" holds no data:
        its size is the number of gradient steps to take.
        """
        if batch is not None and not self.offline:
            batch = self.replay.extend(batch)  # the buffer keeps every transition, warm-up batches included
        if batch is not None:
            batch = self._run_transform(HookPoint.BATCH_PROCESS, batch)
        frames = self.count_frames(batch)
        self._run_log(HookPoint.PRE_STEPS_LOG, batch)
        if self.learning_started():
            with timeit("trainer/optim", exclusive=True):
                losses = LossAverage()
                self._run_plain(HookPoint.PRE_OPTIM_STEPS)
                for _ in range(self.num_epochs):
                    self._run_log(HookPoint.PRE_EPOCH_LOG, batch)
                    self._run_transform(HookPoint.PRE_EPOCH, batch)
                    steps = batch.numel() if self.offline and batch is not None else self.optim_steps_per_batch
                    for _ in range(steps):
                        sample = self._run_transform(HookPoint.PROCESS_OPTIM_BATCH, self.replay.sample(None))
                        losses.add(self.optimization_step(sample))  # loss, priorities, optimiser, targets
                    self._run_log(HookPoint.POST_EPOCH_LOG, batch)
                    self._run_plain(HookPoint.POST_EPOCH)
                self.log_optim_steps(losses)
        if self.exploration_annealer is not None:
            self.exploration_annealer()  # epsilon / noise follow the collected frames
        if self.update_weights is not None:
            self.update_weights()  # the collector acts with the new policy from the next batch on
        self._run_plain(HookPoint.POST_STEPS)
        self._run_log(HookPoint.POST_STEPS_LOG, batch)
        return frames

    def update_priorities(self, sub_batch: TensorDictBase) -> None:
        self.replay.update_priority(sub_batch)

    def update_target_networks(self) -> None:
        if self.target_net_updater_hook is not None:
            self.target_net_updater_hook()

    @staticmethod
    def _policy_network(loss_module: Any) -> torch.nn.Module | None:
        return getattr(loss_module, "actor_network", None) or getattr(loss_module, "value_network", None)

    def _policy_weights(self, actor: torch.nn.Module) -> TensorDictBase | None:
        # The collector runs its own policy object: only push weights when it is not the trained module.
        policy = self.collector.policy
        if policy is actor or any(m is actor for m in policy.modules()):
            return None
        weights = TensorDict.from_module(policy)
        source = TensorDict.from_module(actor)
        if set(weights.keys(True, True)) == set(source.keys(True, True)):
            return source
        return None

    def _setup_logging(self) -> None:
        hooks = [LogScalar(("next", self.done_key), "done_percentage", include_std=False)]
        if self.log_rewards:
            hooks += [LogScalar(("next", self.reward_key), "r_training"),
                      LogScalar(("next", self.reward_key), "r_max", include_std=False, reduction="max")]
        if self.log_actions:
            hooks.append(LogScalar(self.action_key, "action_norm"))
        if self.log_observations:
            hooks.append(LogScalar(self.observation_key, "obs_norm"))
        for hook in hooks:
            self.register_op("pre_steps_log", hook)
