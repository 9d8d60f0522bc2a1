"""The IQL trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["IQLTrainer"]


class IQLTrainer(OffPolicyTrainer):
    """Implicit Q-Learning (https://arxiv.org/abs/2110.06169).

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.

    Examples:
        >>> import torch
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import MLP
        >>> from tdrl.objectives import IQLLoss
        >>> from tdrl.trainers.algorithms.configs.modules import make_tanh_normal_model, make_value_model
        >>> data = ReplayBuffer(storage=LazyTensorStorage(100), batch_size=8)
        >>> _ = data.extend(GymEnv("Pendulum-v1").rollout(50))  # a fixed dataset: 50 random-action steps
        >>> loss = IQLLoss(make_tanh_normal_model(torch.nn.Linear(3, 2), low=-2.0, high=2.0),
        ...                make_value_model(MLP(in_features=4, out_features=1, num_cells=[8]),
        ...                                 in_keys=["observation", "action"], out_keys=["state_action_value"]),
        ...                value_network=make_value_model(torch.nn.Linear(3, 1)))
        >>> trainer = IQLTrainer(collector=None, gradient_steps=4, optim_steps_per_batch=2, loss_module=loss,
        ...     optimizer=torch.optim.Adam(loss.parameters()), replay_buffer=data, progress_bar=False)
        >>> trainer.train()  # offline: gradient_steps optimiser steps on the fixed data
        >>> trainer.optim_count
        4
    """

    _algo_name = "IQL"
    _requires_target_updater = False
