"""The keys of each algorithm's ``loss`` section and their types, without importing the loss classes.

Composing and validating a run config must not import torch (``tdrl train --print-config`` and a typo's
error answer at once), so the keywords of each loss's constructor are listed here.
``tests/trainers/configs/test_loss_keys.py`` checks this table against the signatures of the loss classes
(:data:`tdrl.trainers.builders.LOSSES`); when a loss gains an argument, that test prints the new row.
"""

from __future__ import annotations

__all__ = ["LOSS_KEYS"]

#: algorithm -> configurable loss key -> the type its default has (``None``: any value, checked by the loss)
LOSS_KEYS: dict[str, dict[str, str | None]] = {
    "ppo": {
        "advantage_norm": None, "clip_epsilon": "float", "clip_value": None, "critic_coeff": None, "device": None,
        "entropy_bonus": "bool", "entropy_coeff": None, "functional": "bool", "gamma": "float", "lmbda": "float",
        "log_explained_variance": "bool", "loss_critic_type": "str", "max_importance_ratio": None,
        "normalize_advantage": "bool", "normalize_advantage_exclude_dims": None, "reduction": None,
        "samples_mc_entropy": "int", "separate_losses": "bool"
    },
    "a2c": {
        "advantage_norm": None, "clip_value": None, "critic_coeff": "float", "entropy_bonus": "bool",
        "entropy_coeff": None, "functional": "bool", "gamma": "float", "lmbda": "float", "loss_critic_type": "str",
        "reduction": None, "samples_mc_entropy": "int", "separate_losses": "bool"
    },
    "reinforce": {
        "clip_value": None, "functional": "bool", "gamma": "float", "lmbda": "float", "loss_critic_type": "str",
        "reduction": None, "separate_losses": "bool"
    },
    "sac": {
        "alpha_init": "float", "deactivate_vmap": "bool", "fixed_alpha": "bool", "gamma": "float", "loss_function":
        "str", "max_alpha": None, "min_alpha": None, "num_qvalue_nets": "int", "priority_key": None, "reduction":
        None, "scalar_output_mode": None, "separate_losses": "bool", "skip_done_states": "bool", "target_entropy":
        "str", "use_prioritized_weights": "str"
    },
    "dqn": {
        "double_dqn": "bool", "gamma": "float", "loss_function": "str", "priority_key": None, "reduction": None,
        "use_prioritized_weights": "str"
    },
    "td3": {
        "bounds": None, "deactivate_vmap": "bool", "gamma": "float", "loss_function": "str", "noise_clip": "float",
        "num_qvalue_nets": "int", "policy_noise": "float", "priority_key": None, "reduction": None,
        "separate_losses": "bool", "use_prioritized_weights": "str"
    },
    "ddpg": {
        "gamma": "float", "loss_function": "str", "reduction": None, "separate_losses": "bool",
        "use_prioritized_weights": "str"
    },
    "cql": {
        "alpha_init": "float", "deactivate_vmap": "bool", "deterministic_backup": "bool", "fixed_alpha": "bool",
        "gamma": "float", "lagrange_thresh": "float", "loss_function": "str", "max_alpha": None, "max_q_backup":
        "bool", "min_alpha": None, "min_q_weight": "float", "num_random": "int", "reduction": None,
        "scalar_output_mode": None, "target_entropy": "str", "temperature": "float", "with_lagrange": "bool"
    },
    "iql": {
        "deactivate_vmap": "bool", "expectile": "float", "gamma": "float", "loss_function": "str",
        "num_qvalue_nets": "int", "priority_key": None, "reduction": None, "scalar_output_mode": None,
        "separate_losses": "bool", "temperature": "float"
    },
}
