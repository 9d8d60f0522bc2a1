"""The PPO trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.on_policy import OnPolicyTrainer

__all__ = ["PPOTrainer"]


class PPOTrainer(OnPolicyTrainer):
    """Proximal Policy Optimization (https://arxiv.org/abs/1707.06347): several epochs of clipped updates per batch.

    Takes the arguments of :class:`~tdrl.trainers.algorithms.on_policy.OnPolicyTrainer`; ``num_epochs``
    defaults to 4. Build one from a preset with ``tdrl train algo=ppo`` or :func:`tdrl.trainers.run.build_run`.
    """

    _algo_name = "PPO"
    _default_num_epochs = 4
