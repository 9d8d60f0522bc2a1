"""The TD3 trainer and its delayed-actor optimisation stepper."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import optim

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer
from tdrl.trainers.hooks import OptimizationStepper, TargetNetUpdaterHook
from tdrl.trainers.hooks.base import grad_norm_and_clip

__all__ = ["TD3OptimizationStepper", "TD3Trainer"]


class TD3OptimizationStepper(OptimizationStepper):
    """TD3's update: the critics step every call, the actor every ``policy_update_delay``-th call.

    Each step back-propagates the critic loss and steps ``optimizer_critic``; on every
    ``policy_update_delay``-th step it also back-propagates the actor loss and steps ``optimizer_actor``
    (Fujimoto et al. 2018, https://arxiv.org/abs/1802.09477, section 5.2). Priorities of a prioritised
    buffer are updated from the TD error the loss writes. ``actor_updated`` tells whether the last step
    moved the actor; :class:`TD3Trainer` updates the target networks only then, as the paper and
    TorchRL's ``sota-implementations/td3`` script do.

    The loss's ``value_loss``/``actor_loss`` methods are used when it has them; otherwise its forward
    output's ``critic_loss_key`` and ``actor_loss_key`` entries (the actor loss reads the critics through
    detached parameters, so the two backward passes touch disjoint parameters).

    Args:
        optimizer_actor: optimiser of the actor's parameters.
        optimizer_critic: optimiser of the critics' parameters.
        policy_update_delay: the actor is updated every this many steps (TorchRL's default 2).
        zero_grad_set_to_none: passed to ``zero_grad``.
        actor_loss_key, critic_loss_key: names of the two losses (in the output too).

    Examples:
        >>> a, q = torch.nn.Parameter(torch.ones(1)), torch.nn.Parameter(torch.ones(1))
        >>> class T:
        ...     clip_grad_norm, clip_norm, replay_buffer = True, None, None
        ...     def compute_loss(self, td):
        ...         return TensorDict({"loss_actor": (a * 2).sum(), "loss_qvalue": (q * 2).sum()}, [])
        >>> stepper = TD3OptimizationStepper(torch.optim.SGD([a], lr=0.5), torch.optim.SGD([q], lr=0.5))
        >>> _ = stepper.step(T(), TensorDict({}, []))
        >>> a.item(), q.item(), stepper.actor_updated
        (1.0, 0.0, False)
        >>> _ = stepper.step(T(), TensorDict({}, []))
        >>> a.item(), q.item(), stepper.actor_updated
        (0.0, -1.0, True)
    """

    updates_replay_priority = True

    def __init__(
        self,
        optimizer_actor: optim.Optimizer,
        optimizer_critic: optim.Optimizer,
        *,
        policy_update_delay: int = 2,
        zero_grad_set_to_none: bool = True,
        actor_loss_key: str = "loss_actor",
        critic_loss_key: str = "loss_qvalue",
    ) -> None:
        if int(policy_update_delay) < 1:
            raise ValueError(f"policy_update_delay must be >= 1, got {policy_update_delay}")
        self.optimizer_actor = optimizer_actor
        self.optimizer_critic = optimizer_critic
        self.policy_update_delay = int(policy_update_delay)
        self.zero_grad_set_to_none = zero_grad_set_to_none
        self.actor_loss_key = actor_loss_key
        self.critic_loss_key = critic_loss_key
        self._update_counter = 0
        self.actor_updated = False

    def state_dict(self) -> dict[str, Any]:
        return {
            "update_counter": self._update_counter,
            "optimizer_actor": self.optimizer_actor.state_dict(),
            "optimizer_critic": self.optimizer_critic.state_dict(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._update_counter = int(state_dict.get("update_counter", 0))
        self.optimizer_actor.load_state_dict(state_dict["optimizer_actor"])
        self.optimizer_critic.load_state_dict(state_dict["optimizer_critic"])

    def _apply(self, optimizer: optim.Optimizer, trainer: Any) -> float:
        norm = grad_norm_and_clip(optimizer, trainer.clip_grad_norm, trainer.clip_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=self.zero_grad_set_to_none)
        return norm

    def step(self, trainer: Any, sub_batch: TensorDictBase) -> TensorDictBase:
        self._update_counter += 1
        do_actor = self._update_counter % self.policy_update_delay == 0
        loss_module = getattr(trainer, "loss_module", None)
        if hasattr(loss_module, "value_loss") and hasattr(loss_module, "actor_loss"):
            # TorchRL's order: the actor loss reads the critics after their update.
            q_loss = trainer.compute_loss(sub_batch, method="value_loss")[0]
            q_loss.backward()
            critic_norm = self._apply(self.optimizer_critic, trainer)
            actor_loss = q_loss.new_zeros(())
            if do_actor:
                actor_loss = trainer.compute_loss(sub_batch, method="actor_loss")[0]
                actor_loss.backward()
                self._apply(self.optimizer_actor, trainer)
        else:
            # One forward computes both losses; the actor's backward reads the critics' weights, so both
            # backward passes run before either optimiser changes them.
            losses = trainer.compute_loss(sub_batch)
            q_loss = self._get(losses, self.critic_loss_key)
            actor_loss = self._get(losses, self.actor_loss_key)
            q_loss.backward()
            if do_actor:
                actor_loss.backward()
            critic_norm = self._apply(self.optimizer_critic, trainer)
            if do_actor:
                self._apply(self.optimizer_actor, trainer)
            else:
                actor_loss = q_loss.new_zeros(())
        self.actor_updated = do_actor
        buffer = getattr(trainer, "replay_buffer", None)
        if buffer is not None and hasattr(buffer, "update_tensordict_priority"):
            buffer.update_tensordict_priority(sub_batch)
        return TensorDict({self.critic_loss_key: q_loss.detach(), self.actor_loss_key: actor_loss.detach(),
                           "grad_norm": torch.tensor(critic_norm)}, [])

    @staticmethod
    def _get(losses: TensorDictBase, key: str) -> torch.Tensor:
        if key not in losses.keys():
            raise KeyError(f"TD3OptimizationStepper: the loss output has no {key!r} (it has {sorted(losses.keys())})")
        return losses.get(key)


class _DelayedTargetUpdate(TargetNetUpdaterHook):
    # Targets move with the actor (TD3 paper, Algorithm 1); TorchRL's TD3Trainer moves them every step.
    def __init__(self, target_params_updater: Any, stepper: TD3OptimizationStepper) -> None:
        super().__init__(target_params_updater)
        self.stepper = stepper

    def __call__(self, tensordict: TensorDictBase | None = None) -> None:
        if self.stepper.actor_updated:
            self.target_params_updater.step()


class TD3Trainer(OffPolicyTrainer):
    """Twin Delayed DDPG (https://arxiv.org/abs/1802.09477).

    Pass a :class:`TD3OptimizationStepper` as ``optimization_stepper`` for the delayed actor update
    (TorchRL's ``TD3TrainerConfig`` builds one with ``policy_update_delay=2``); the target networks are then
    updated only on the steps that update the actor. With a plain ``optimizer`` every step updates the
    actor, the critics and the targets. Takes the arguments of
    :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.

    Examples:
        >>> from tdrl.trainers.algorithms.configs import compose_run_config
        >>> from tdrl.trainers.run_parts import build_parts
        >>> trainer = build_parts(compose_run_config(["algo=td3", "env=Pendulum-v1"])).trainer  # the td3_pendulum preset, built without training
        >>> type(trainer.optimization_stepper).__name__  # the delayed actor update
        'TD3OptimizationStepper'
    """

    _algo_name = "TD3"
    _requires_target_updater = True

    def _target_update_hook(self, target_net_updater: Any) -> TargetNetUpdaterHook:
        if isinstance(self.optimization_stepper, TD3OptimizationStepper):
            return _DelayedTargetUpdate(target_net_updater, self.optimization_stepper)
        return TargetNetUpdaterHook(target_net_updater)
