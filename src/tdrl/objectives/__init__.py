"""tdrl.objectives."""

from tdrl.objectives.a2c import A2CLoss
from tdrl.objectives.act import ACTLoss
from tdrl.objectives.bc import BCLoss
from tdrl.objectives.common import LossModule, check_finite
from tdrl.objectives.cql import CQLLoss, DiscreteCQLLoss
from tdrl.objectives.crossq import CrossQLoss
from tdrl.objectives.ddpg import DDPGLoss
from tdrl.objectives.decision_transformer import DTLoss, OnlineDTLoss
from tdrl.objectives.diffusion_bc import DiffusionBCLoss
from tdrl.objectives.discrete_sac import DiscreteSACLoss
from tdrl.objectives.dqn import DistributionalDQNLoss, DQNLoss
from tdrl.objectives.dreamer import DreamerActorLoss, DreamerModelLoss, DreamerValueLoss
from tdrl.objectives.dreamer_v3 import (
    DreamerV3ActorLoss,
    DreamerV3Loss,
    DreamerV3ModelLoss,
    DreamerV3ValueLoss,
    categorical_kl_balanced,
    categorical_kl_terms,
    symexp,
    symlog,
    two_hot_cross_entropy,
    two_hot_decode,
    two_hot_encode,
)
from tdrl.objectives.gail import GAILLoss
from tdrl.objectives.iql import DiscreteIQLLoss, IQLLoss
from tdrl.objectives.multiagent import IPPOLoss, MAPPOLoss, QMixerLoss
from tdrl.objectives.pilco import ExponentialQuadraticCost
from tdrl.objectives.ppo import ClipPPOLoss, KLPENPPOLoss, PPOLoss
from tdrl.objectives.redq import REDQLoss
from tdrl.objectives.reinforce import ReinforceLoss
from tdrl.objectives.rnd import RNDLoss
from tdrl.objectives.sac import SACLoss
from tdrl.objectives.td3 import TD3Loss
from tdrl.objectives.td3_bc import TD3BCLoss
from tdrl.objectives.tqc import TQCLoss
from tdrl.objectives.utils import (
    HardUpdate,
    KLAdaptiveLR,
    SoftUpdate,
    TargetNetUpdater,
    ValueEstimators,
    add_random_module,
    default_value_kwargs,
    distance_loss,
    group_optimizers,
    hold_out_net,
    hold_out_params,
    next_state_value,
)

__all__: list[str] = [
    "A2CLoss",
    "ACTLoss",
    "DiffusionBCLoss",
    "ExponentialQuadraticCost",
    "KLAdaptiveLR",
    "add_random_module",
    "BCLoss",
    "CQLLoss",
    "CrossQLoss",
    "DDPGLoss",
    "DreamerActorLoss",
    "DreamerModelLoss",
    "DreamerValueLoss",
    "DreamerV3ActorLoss",
    "DreamerV3Loss",
    "DreamerV3ModelLoss",
    "DreamerV3ValueLoss",
    "categorical_kl_balanced",
    "categorical_kl_terms",
    "symexp",
    "symlog",
    "two_hot_cross_entropy",
    "two_hot_decode",
    "two_hot_encode",
    "DTLoss",
    "GAILLoss",
    "OnlineDTLoss",
    "DiscreteCQLLoss",
    "DiscreteIQLLoss",
    "DiscreteSACLoss",
    "IQLLoss",
    "IPPOLoss",
    "MAPPOLoss",
    "QMixerLoss",
    "REDQLoss",
    "RNDLoss",
    "ReinforceLoss",
    "TD3BCLoss",
    "TD3Loss",
    "TQCLoss",
    "SACLoss",
    "ClipPPOLoss",
    "KLPENPPOLoss",
    "PPOLoss",
    "DQNLoss",
    "DistributionalDQNLoss",
    "HardUpdate",
    "LossModule",
    "SoftUpdate",
    "TargetNetUpdater",
    "ValueEstimators",
    "check_finite",
    "default_value_kwargs",
    "distance_loss",
    "group_optimizers",
    "hold_out_net",
    "hold_out_params",
    "next_state_value",
]
