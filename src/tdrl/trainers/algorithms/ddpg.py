"""The DDPG trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["DDPGTrainer"]


class DDPGTrainer(OffPolicyTrainer):
    """Deep Deterministic Policy Gradient (https://arxiv.org/abs/1509.02971).

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.

    Examples:
        >>> from tdrl.trainers.algorithms.configs import compose_run_config
        >>> from tdrl.trainers.run_parts import build_parts
        >>> trainer = build_parts(compose_run_config(["algo=ddpg"])).trainer  # the ddpg_pendulum preset, built without training
        >>> type(trainer.loss_module).__name__, trainer.optimization_stepper is None
        ('DDPGLoss', True)
    """

    _algo_name = "DDPG"
    _requires_target_updater = False
