"""Plain ``nn.Module`` networks: MLPs, ConvNets, dueling and DDPG networks, noisy layers, the GPT-2 reward model."""

from tdrl.modules.models.act import ACTModel
from tdrl.modules.models.batchrenorm import BatchRenorm1d
from tdrl.modules.models.conv import Conv2dNet, Conv3dNet, ConvNet
from tdrl.modules.models.ddpg import (
    DdpgCnnActor,
    DdpgCnnQNet,
    DdpgMlpActor,
    DdpgMlpQNet,
    ddpg_init_last_layer,
)
from tdrl.modules.models.decision_transformer import DecisionTransformer, DTActor, OnlineDTActor
from tdrl.modules.models.dreamer_v3 import (
    DreamerV3BlockGRU,
    DreamerV3BlockGRUCell,
    DreamerV3ImageDecoder,
    DreamerV3ImageEncoder,
    DreamerV3MLP,
)
from tdrl.modules.models.dueling import DuelingCnnDQNet, DuelingMlpDQNet
from tdrl.modules.models.exploration import LazygSDEModule, gSDEModule
from tdrl.modules.models.llm import GPT2RewardModel
from tdrl.modules.models.mlp import MLP
from tdrl.modules.models.model_based import (
    DreamerActor,
    ObsDecoder,
    ObsEncoder,
    RSSMPosterior,
    RSSMPrior,
    RSSMRollout,
)
from tdrl.modules.models.multiagent import (
    Mixer,
    MultiAgentConvNet,
    MultiAgentMLP,
    MultiAgentNetBase,
    QMixer,
    VDNMixer,
)
from tdrl.modules.models.noisy import NoisyLazyLinear, NoisyLinear, reset_noise
from tdrl.modules.models.rbf_controller import RBFController
from tdrl.modules.models.rssm_v3 import RSSMPosteriorV3, RSSMPriorV3, RSSMRolloutV3, RSSMStateEstimatorV3
from tdrl.modules.models.two_hot import SymExpTwoHot
from tdrl.modules.models.utils import SquashDims, Squeeze2dLayer, SqueezeLayer

# TorchRL also exports these TensorDict-level modules from ``torchrl.modules.models``.
from tdrl.modules.tensordict_module.dropout import ConsistentDropout, ConsistentDropoutModule
from tdrl.modules.tensordict_module.qvalue import DistributionalDQNnet

__all__ = [
    "ACTModel",
    "RBFController",
    "DreamerActor",
    "ObsDecoder",
    "ObsEncoder",
    "RSSMPosterior",
    "RSSMPrior",
    "RSSMRollout",
    "DreamerV3BlockGRU",
    "DreamerV3BlockGRUCell",
    "DreamerV3ImageDecoder",
    "DreamerV3ImageEncoder",
    "DreamerV3MLP",
    "RSSMPosteriorV3",
    "RSSMPriorV3",
    "RSSMRolloutV3",
    "RSSMStateEstimatorV3",
    "SymExpTwoHot",
    "DTActor",
    "DecisionTransformer",
    "OnlineDTActor",
    "BatchRenorm1d",
    "ConsistentDropout",
    "ConsistentDropoutModule",
    "DistributionalDQNnet",
    "Mixer",
    "MultiAgentConvNet",
    "MultiAgentMLP",
    "MultiAgentNetBase",
    "QMixer",
    "VDNMixer",
    "Conv2dNet",
    "Conv3dNet",
    "ConvNet",
    "DdpgCnnActor",
    "DdpgCnnQNet",
    "DdpgMlpActor",
    "DdpgMlpQNet",
    "DuelingCnnDQNet",
    "DuelingMlpDQNet",
    "GPT2RewardModel",
    "MLP",
    "NoisyLazyLinear",
    "LazygSDEModule",
    "NoisyLinear",
    "SquashDims",
    "Squeeze2dLayer",
    "SqueezeLayer",
    "ddpg_init_last_layer",
    "gSDEModule",
    "reset_noise",
]
