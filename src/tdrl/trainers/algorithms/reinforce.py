"""The REINFORCE trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.on_policy import OnPolicyTrainer

__all__ = ["ReinforceTrainer"]


class ReinforceTrainer(OnPolicyTrainer):
    """REINFORCE (Williams, 1992) with a learned baseline: one pass per batch.

    Takes the arguments of :class:`~tdrl.trainers.algorithms.on_policy.OnPolicyTrainer`; ``num_epochs``
    defaults to 1. Build one from a preset with ``tdrl train algo=reinforce`` or :func:`tdrl.trainers.run.build_run`.

    Examples:
        >>> from tdrl.trainers.algorithms.configs import compose_run_config
        >>> from tdrl.trainers.run_parts import build_parts
        >>> trainer = build_parts(compose_run_config(["algo=reinforce"])).trainer  # the reinforce_cartpole preset, built without training
        >>> type(trainer.loss_module).__name__, trainer.num_epochs
        ('ReinforceLoss', 1)
    """

    _algo_name = "REINFORCE"
    _default_num_epochs = 1
