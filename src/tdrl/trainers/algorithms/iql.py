"""The IQL trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["IQLTrainer"]


class IQLTrainer(OffPolicyTrainer):
    """Implicit Q-Learning (https://arxiv.org/abs/2110.06169).

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.
    """

    _algo_name = "IQL"
    _requires_target_updater = False
