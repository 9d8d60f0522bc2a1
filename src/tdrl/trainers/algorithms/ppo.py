"""The PPO trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.on_policy import OnPolicyTrainer

__all__ = ["PPOTrainer"]


class PPOTrainer(OnPolicyTrainer):
    """Proximal Policy Optimization (https://arxiv.org/abs/1707.06347): several epochs of clipped updates per batch.

    Takes the arguments of :class:`~tdrl.trainers.algorithms.on_policy.OnPolicyTrainer`; ``num_epochs``
    defaults to 4. Build one from a preset with ``tdrl train algo=ppo`` or :func:`tdrl.trainers.run.build_run`.

    Examples:
        >>> from tdrl.trainers.algorithms.configs import compose_run_config
        >>> from tdrl.trainers.run_parts import build_parts
        >>> trainer = build_parts(compose_run_config(["algo=ppo"])).trainer  # the ppo_cartpole preset, built without training
        >>> type(trainer.loss_module).__name__, isinstance(trainer, OnPolicyTrainer)
        ('ClipPPOLoss', True)
    """

    _algo_name = "PPO"
    _default_num_epochs = 4
