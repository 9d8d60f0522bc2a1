"""The A2C trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.on_policy import OnPolicyTrainer

__all__ = ["A2CTrainer"]


class A2CTrainer(OnPolicyTrainer):
    """Advantage actor-critic (https://arxiv.org/abs/1602.01783): one pass per batch.

    Takes the arguments of :class:`~tdrl.trainers.algorithms.on_policy.OnPolicyTrainer`; ``num_epochs``
    defaults to 1. Build one from a preset with ``tdrl train algo=a2c`` or :func:`tdrl.trainers.run.build_run`.

    Examples:
        >>> from tdrl.trainers.algorithms.configs import compose_run_config
        >>> from tdrl.trainers.run_parts import build_parts
        >>> trainer = build_parts(compose_run_config(["algo=a2c"])).trainer  # the a2c_cartpole preset, built without training
        >>> type(trainer.loss_module).__name__, trainer.num_epochs
        ('A2CLoss', 1)
    """

    _algo_name = "A2C"
    _default_num_epochs = 1
