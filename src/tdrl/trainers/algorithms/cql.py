"""The CQL trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["CQLTrainer"]


class CQLTrainer(OffPolicyTrainer):
    """Conservative Q-Learning (https://arxiv.org/abs/2006.04779).

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.
    """

    _algo_name = "CQL"
    _requires_target_updater = False
