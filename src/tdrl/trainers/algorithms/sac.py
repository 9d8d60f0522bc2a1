"""The SAC trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["SACTrainer"]


class SACTrainer(OffPolicyTrainer):
    """Soft Actor-Critic (https://arxiv.org/abs/1801.01290).

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.

    Examples:
        >>> from tdrl.trainers.algorithms.configs import compose_run_config
        >>> from tdrl.trainers.run_parts import build_parts
        >>> trainer = build_parts(compose_run_config(["algo=sac", "env=Pendulum-v1"])).trainer  # the sac_pendulum preset, built without training
        >>> type(trainer.loss_module).__name__, trainer.replay_buffer is not None
        ('SACLoss', True)
    """

    _algo_name = "SAC"
    _requires_target_updater = True
