"""The TD3 trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["TD3Trainer"]


class TD3Trainer(OffPolicyTrainer):
    """Twin Delayed DDPG (https://arxiv.org/abs/1802.09477); the loss delays actor updates through its own arguments or an optimization stepper.

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.
    """

    _algo_name = "TD3"
    _requires_target_updater = True
