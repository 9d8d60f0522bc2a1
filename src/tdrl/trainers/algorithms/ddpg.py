"""The DDPG trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["DDPGTrainer"]


class DDPGTrainer(OffPolicyTrainer):
    """Deep Deterministic Policy Gradient (https://arxiv.org/abs/1509.02971).

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.
    """

    _algo_name = "DDPG"
    _requires_target_updater = False
