"""The CQL trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["CQLTrainer"]


class CQLTrainer(OffPolicyTrainer):
    """Conservative Q-Learning (https://arxiv.org/abs/2006.04779).

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.

    Examples:
        >>> import torch
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> from tdrl.objectives import CQLLoss
        >>> env = GymEnv("Pendulum-v1")
        >>> data = ReplayBuffer(storage=LazyTensorStorage(100), batch_size=8)
        >>> _ = data.extend(env.rollout(50))  # a fixed dataset: 50 random-action steps
        >>> net = TensorDictModule(torch.nn.Sequential(torch.nn.Linear(3, 2), NormalParamExtractor()),
        ...                        ["observation"], ["loc", "scale"])
        >>> actor = ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=TanhNormal,
        ...                            spec=env.action_spec, return_log_prob=True)
        >>> loss = CQLLoss(actor, ValueOperator(MLP(in_features=4, out_features=1, num_cells=[8]),
        ...                                     in_keys=["observation", "action"]))
        >>> trainer = CQLTrainer(collector=None, gradient_steps=4, optim_steps_per_batch=2, loss_module=loss,
        ...     optimizer=torch.optim.Adam(loss.parameters()), replay_buffer=data, progress_bar=False)
        >>> trainer.train()  # offline: gradient_steps optimiser steps on the fixed data
        >>> trainer.optim_count
        4
    """

    _algo_name = "CQL"
    _requires_target_updater = False
