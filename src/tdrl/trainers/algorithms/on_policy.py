"""Shared wiring of the on-policy trainers (PPO, A2C, REINFORCE): GAE, minibatch buffer, weights, logging."""

from __future__ import annotations

import functools
import itertools
import pathlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey
from torch import optim

from tdrl._utils import timeit
from tdrl.data import SamplerWithoutReplacement
from tdrl.objectives.value import GAE
from tdrl.trainers.hooks import (
    LogScalar,
    LRSchedulerHook,
    ReplayBufferTrainer,
    TargetNetUpdaterHook,
    UpdateWeights,
    ValueEstimatorHook,
)
from tdrl.trainers.trainer import HookPoint, LossAverage, Trainer

__all__ = ["OnPolicyTrainer"]


class OnPolicyTrainer(Trainer):
    """A :class:`~tdrl.trainers.Trainer` wired for on-policy learning.

    Before each epoch, GAE (``add_gae``) writes advantages and value targets on the whole batch, which is
    then written to ``replay_buffer`` and iterated over in minibatches (use a ``SamplerWithoutReplacement``
    and set the minibatch size on the buffer). The collector's policy gets the new weights after each
    batch, an optional LR scheduler steps once per batch, and rewards/actions are logged.

    Args:
        collector, total_frames, frame_skip, optim_steps_per_batch: as in :class:`~tdrl.trainers.Trainer`;
            so are ``loss_module``, ``optimizer``, ``logger``, ``clip_grad_norm``, ``clip_norm``,
            ``progress_bar``, ``seed``, ``save_trainer_interval``, ``log_interval``, ``save_trainer_file``,
            ``async_collection``, ``log_timings`` and ``auto_log_optim_steps``.
        lr_scheduler: stepped once per collected batch.
        target_net_updater: stepped after every optimiser step.
        num_epochs: passes per batch (default: the algorithm's own).
        replay_buffer: the minibatch buffer (``None``: the whole batch is one minibatch).
        batch_size: unused (the buffer's batch size drives minibatches), as in TorchRL.
        gamma, lmbda: GAE parameters.
        enable_logging, log_rewards, log_actions, log_observations: which statistics to log.
        add_gae: compute GAE with the loss's critic; ``gae``: a custom estimator.
        weight_update_map: kept for TorchRL compatibility (weights are pulled from the loss's actor).
        done_key, terminated_key, reward_key, episode_reward_key, action_key, observation_key: tensordict keys.
        timing_print_interval: see :class:`~tdrl.trainers.Trainer`.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.collectors import Collector
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import OneHotCategorical, ProbabilisticActor, ValueOperator
        >>> from tdrl.objectives import ClipPPOLoss
        >>> env = GymEnv("CartPole-v1")
        >>> actor = ProbabilisticActor(TensorDictModule(torch.nn.Linear(4, 2), ["observation"], ["logits"]),
        ...     in_keys=["logits"], distribution_class=OneHotCategorical, spec=env.action_spec, return_log_prob=True)
        >>> loss = ClipPPOLoss(actor, ValueOperator(torch.nn.Linear(4, 1), in_keys=["observation"]))
        >>> trainer = OnPolicyTrainer(collector=Collector(env, actor, frames_per_batch=32, total_frames=64), total_frames=64,
        ...     frame_skip=1, optim_steps_per_batch=2, loss_module=loss, optimizer=torch.optim.Adam(loss.parameters()),
        ...     replay_buffer=ReplayBuffer(storage=LazyTensorStorage(32), sampler=SamplerWithoutReplacement(),
        ...                                batch_size=16), progress_bar=False, num_epochs=3)
        >>> trainer.train()  # per batch: GAE, then 3 epochs of 2 minibatches
        >>> trainer.collected_frames, trainer.optim_count
        (64, 12)
    """

    _algo_name: str = "on-policy"
    _default_num_epochs: int = 1

    def __init__(
        self,
        *,
        collector: Any,
        total_frames: int,
        frame_skip: int,
        optim_steps_per_batch: int | None,
        loss_module: Any,
        optimizer: optim.Optimizer | None = None,
        lr_scheduler: Any = None,
        target_net_updater: Any = None,
        logger: Any = None,
        clip_grad_norm: bool = True,
        clip_norm: float | None = None,
        progress_bar: bool = True,
        seed: int | None = None,
        save_trainer_interval: int = 10000,
        log_interval: int = 10000,
        save_trainer_file: str | pathlib.Path | None = None,
        num_epochs: int | None = None,
        replay_buffer: Any = None,
        batch_size: int | None = None,
        gamma: float = 0.99,
        lmbda: float = 0.95,
        enable_logging: bool = True,
        log_rewards: bool = True,
        log_actions: bool = True,
        log_observations: bool = False,
        async_collection: bool = False,
        add_gae: bool = True,
        gae: Callable[[TensorDictBase], TensorDictBase] | None = None,
        weight_update_map: dict[str, str] | None = None,
        log_timings: bool = False,
        auto_log_optim_steps: bool = True,
        done_key: NestedKey = "done",
        terminated_key: NestedKey = "terminated",
        reward_key: NestedKey = "reward",
        episode_reward_key: NestedKey = "reward",
        action_key: NestedKey = "action",
        observation_key: NestedKey = "observation",
        timing_print_interval: int | None = None,
    ) -> None:
        super().__init__(
            collector=collector, total_frames=total_frames, frame_skip=frame_skip,
            optim_steps_per_batch=optim_steps_per_batch, loss_module=loss_module, optimizer=optimizer,
            target_net_updater=target_net_updater, logger=logger, clip_grad_norm=clip_grad_norm,
            clip_norm=clip_norm, progress_bar=progress_bar, seed=seed,
            save_trainer_interval=save_trainer_interval, log_interval=log_interval,
            save_trainer_file=save_trainer_file,
            num_epochs=self._default_num_epochs if num_epochs is None else num_epochs,
            async_collection=async_collection, log_timings=log_timings,
            auto_log_optim_steps=auto_log_optim_steps, timing_print_interval=timing_print_interval,
        )
        self.replay_buffer = replay_buffer
        if batch_size is not None:
            warnings.warn("batch_size is unused by on-policy trainers: set the batch size on the replay buffer",
                          UserWarning, stacklevel=2)
        if not add_gae and gae is not None:
            raise ValueError("gae must not be provided if add_gae is False")
        # The parts of the explicit step (see step()): each kept as a checkpointed module, none a hook.
        self.value_estimator: ValueEstimatorHook | None = None
        if add_gae:
            if gae is None:
                gae = GAE(gamma=gamma, lmbda=lmbda, value_network=loss_module.critic_network, average_gae=True)
            if hasattr(gae, "set_keys"):
                gae.set_keys(reward=reward_key, done=done_key, terminated=terminated_key)
            self.value_estimator = ValueEstimatorHook(gae)
            self.register_module("value_estimator", self.value_estimator)
        self.lr_scheduler: LRSchedulerHook | None = None
        if lr_scheduler is not None:
            self.lr_scheduler = LRSchedulerHook(lr_scheduler)
            self.lr_scheduler.attach(self)
            self.register_module("lr_scheduler", self.lr_scheduler)
        self.target_net_updater_hook = (None if target_net_updater is None
                                        else TargetNetUpdaterHook(target_net_updater))
        if hasattr(loss_module, "set_keys"):
            loss_module.set_keys(reward=reward_key, done=done_key, terminated=terminated_key, action=action_key)
        self.minibatches = self._setup_minibatches(replay_buffer)
        self.weight_update_map = weight_update_map
        actor = getattr(loss_module, "actor_network", None)
        self.update_weights = None if actor is None else UpdateWeights(
            collector, 1, policy_weights_getter=functools.partial(TensorDict.from_module, actor))
        self.enable_logging = enable_logging
        self.log_rewards = log_rewards
        self.log_actions = log_actions
        self.log_observations = log_observations
        self.done_key, self.terminated_key, self.reward_key = done_key, terminated_key, reward_key
        self.episode_reward_key, self.action_key, self.observation_key = episode_reward_key, action_key, observation_key
        if enable_logging:
            self._setup_logging()

    def _setup_minibatches(self, replay_buffer: Any) -> ReplayBufferTrainer | None:
        """The buffer the epochs draw minibatches from (registered, so it is checkpointed)."""
        if replay_buffer is None:
            return None
        if not isinstance(replay_buffer.sampler, SamplerWithoutReplacement):
            warnings.warn(f"Sampler is not a SamplerWithoutReplacement, which is required for {self._algo_name}.",
                          UserWarning, stacklevel=3)
        minibatches = ReplayBufferTrainer(replay_buffer, batch_size=None, flatten_tensordicts=True, iterate=True)
        self.register_module("replay_buffer", minibatches)
        return minibatches

    def step(self, batch: TensorDictBase) -> int:
        """One on-policy iteration on a collected batch, top to bottom (CleanRL's PPO loop from library parts).

        Hook points (:class:`~tdrl.trainers.trainer.HookPoint`) run where their names say; the algorithm's
        own parts are called here, in this order, whatever was registered.
        """
        batch = self._run_transform(HookPoint.BATCH_PROCESS, batch)
        frames = self.count_frames(batch)
        self._run_log(HookPoint.PRE_STEPS_LOG, batch)
        with timeit("trainer/optim", exclusive=True):
            losses = LossAverage()
            self._run_plain(HookPoint.PRE_OPTIM_STEPS)
            for _ in range(self.num_epochs):
                self._run_log(HookPoint.PRE_EPOCH_LOG, batch)
                # advantages and value targets with the critic as it is now (recomputed every epoch, as TorchRL)
                data = self.value_estimator(batch) if self.value_estimator is not None else batch
                if self.minibatches is not None:
                    self.minibatches.extend(data)  # the buffer now holds exactly this batch, flattened
                data = self._run_transform(HookPoint.PRE_EPOCH, data)
                for minibatch in self._epoch_minibatches(data):
                    minibatch = self._run_transform(HookPoint.PROCESS_OPTIM_BATCH, minibatch)
                    losses.add(self.optimization_step(minibatch))
                self._run_log(HookPoint.POST_EPOCH_LOG, batch)
                self._run_plain(HookPoint.POST_EPOCH)
            self.log_optim_steps(losses)
        if self.lr_scheduler is not None:
            self.lr_scheduler()  # once per batch
        if self.update_weights is not None:
            self.update_weights()  # the collector acts with the new policy from the next batch on
        self._run_plain(HookPoint.POST_STEPS)
        self._run_log(HookPoint.POST_STEPS_LOG, batch)
        return frames

    def _epoch_minibatches(self, data: TensorDictBase) -> Iterator[TensorDictBase]:
        """The minibatches of one epoch: one pass over the buffer (at most ``optim_steps_per_batch``), or the
        whole batch once without a buffer."""
        if self.minibatches is None:
            yield data
            return
        steps = range(self.optim_steps_per_batch) if self.optim_steps_per_batch is not None else itertools.count()
        for _ in steps:
            try:
                yield self.minibatches.sample(None)
            except StopIteration:
                return

    def update_priorities(self, sub_batch: TensorDictBase) -> None:
        if self.minibatches is not None:
            self.minibatches.update_priority(sub_batch)

    def update_target_networks(self) -> None:
        if self.target_net_updater_hook is not None:  # e.g. the EWMA proximal policy of TorchRL's PPO config
            self.target_net_updater_hook()

    def _setup_logging(self) -> None:
        hooks = [LogScalar(("next", self.done_key), "done_percentage", include_std=False)]
        if self.log_rewards:
            hooks += [
                LogScalar(("next", self.reward_key), "r_training", log_pbar=False),
                LogScalar(("next", self.reward_key), "r_max", include_std=False, reduction="max"),
                LogScalar(("next", self.episode_reward_key), "r_total", include_std=False, reduction="sum"),
            ]
        if self.log_actions:
            hooks.append(LogScalar(self.action_key, "action_norm"))
        if self.log_observations:
            hooks.append(LogScalar(self.observation_key, "obs_norm"))
        for hook in hooks:
            self.register_op("pre_steps_log", hook)
