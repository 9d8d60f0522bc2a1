"""Algorithm trainers: a :class:`~tdrl.trainers.Trainer` pre-wired for one algorithm."""

from tdrl.trainers.algorithms.a2c import A2CTrainer
from tdrl.trainers.algorithms.on_policy import OnPolicyTrainer
from tdrl.trainers.algorithms.ppo import PPOTrainer
from tdrl.trainers.algorithms.reinforce import ReinforceTrainer

__all__ = ["A2CTrainer", "OnPolicyTrainer", "PPOTrainer", "ReinforceTrainer"]
