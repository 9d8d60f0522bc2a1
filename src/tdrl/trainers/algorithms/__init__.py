"""Algorithm trainers: a :class:`~tdrl.trainers.Trainer` pre-wired for one algorithm."""

from tdrl.trainers.algorithms.a2c import A2CTrainer
from tdrl.trainers.algorithms.cql import CQLTrainer
from tdrl.trainers.algorithms.ddpg import DDPGTrainer
from tdrl.trainers.algorithms.dqn import DQNTrainer
from tdrl.trainers.algorithms.iql import IQLTrainer
from tdrl.trainers.algorithms.off_policy import ExplorationAnnealer, OfflineSteps, OffPolicyTrainer
from tdrl.trainers.algorithms.on_policy import OnPolicyTrainer
from tdrl.trainers.algorithms.ppo import PPOTrainer
from tdrl.trainers.algorithms.reinforce import ReinforceTrainer
from tdrl.trainers.algorithms.sac import SACTrainer
from tdrl.trainers.algorithms.td3 import TD3OptimizationStepper, TD3Trainer

__all__ = [
    "A2CTrainer",
    "CQLTrainer",
    "DDPGTrainer",
    "DQNTrainer",
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
