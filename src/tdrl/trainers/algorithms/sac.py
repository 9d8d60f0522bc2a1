"""The SAC trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["SACTrainer"]


class SACTrainer(OffPolicyTrainer):
    """Soft Actor-Critic (https://arxiv.org/abs/1801.01290).

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.
    """

    _algo_name = "SAC"
    _requires_target_updater = True
