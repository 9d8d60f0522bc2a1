"""Algorithm trainers: a :class:`~tdrl.trainers.Trainer` pre-wired for one algorithm."""

from __future__ import annotations

from tdrl.lazy import lazy_exports

# Imported on first use (tdrl.lazy): the config schema under this package must not load the trainers (torch).
_MODULES: dict[str, tuple[str, ...]] = {
    "tdrl.trainers.algorithms.a2c": ("A2CTrainer",),
    "tdrl.trainers.algorithms.cql": ("CQLTrainer",),
    "tdrl.trainers.algorithms.ddpg": ("DDPGTrainer",),
    "tdrl.trainers.algorithms.dqn": ("DQNTrainer",),
    "tdrl.trainers.algorithms.dreamer_v3": ("DreamerV3OptimizationStepper", "DreamerV3Optimizer", "DreamerV3UpdateRatio"),
    "tdrl.trainers.algorithms.iql": ("IQLTrainer",),
    "tdrl.trainers.algorithms.off_policy": ("ExplorationAnnealer", "OfflineSteps", "OffPolicyTrainer"),
    "tdrl.trainers.algorithms.on_policy": ("OnPolicyTrainer",),
    "tdrl.trainers.algorithms.ppo": ("PPOTrainer",),
    "tdrl.trainers.algorithms.reinforce": ("ReinforceTrainer",),
    "tdrl.trainers.algorithms.sac": ("SACTrainer",),
    "tdrl.trainers.algorithms.td3": ("TD3OptimizationStepper", "TD3Trainer"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "A2CTrainer",
    "CQLTrainer",
    "DDPGTrainer",
    "DQNTrainer",
    "DreamerV3OptimizationStepper",
    "DreamerV3Optimizer",
    "DreamerV3UpdateRatio",
    "ExplorationAnnealer",
    "IQLTrainer",
    "OffPolicyTrainer",
    "OfflineSteps",
    "OnPolicyTrainer",
    "PPOTrainer",
    "ReinforceTrainer",
    "SACTrainer",
    "TD3OptimizationStepper",
    "TD3Trainer",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
