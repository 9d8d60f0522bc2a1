"""The A2C trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.on_policy import OnPolicyTrainer

__all__ = ["A2CTrainer"]


class A2CTrainer(OnPolicyTrainer):
    """Advantage actor-critic (https://arxiv.org/abs/1602.01783): one pass per batch.

    Takes the arguments of :class:`~tdrl.trainers.algorithms.on_policy.OnPolicyTrainer`; ``num_epochs``
    defaults to 1. Build one from a preset with ``tdrl train algo=a2c`` or :func:`tdrl.trainers.run.build_run`.
    """

    _algo_name = "A2C"
    _default_num_epochs = 1
