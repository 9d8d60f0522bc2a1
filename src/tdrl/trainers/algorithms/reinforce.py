"""The REINFORCE trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.on_policy import OnPolicyTrainer

__all__ = ["ReinforceTrainer"]


class ReinforceTrainer(OnPolicyTrainer):
    """REINFORCE (Williams, 1992) with a learned baseline: one pass per batch.

    Takes the arguments of :class:`~tdrl.trainers.algorithms.on_policy.OnPolicyTrainer`; ``num_epochs``
    defaults to 1. Build one from a preset with ``tdrl train algo=reinforce`` or :func:`tdrl.trainers.run.build_run`.
    """

    _algo_name = "REINFORCE"
    _default_num_epochs = 1
