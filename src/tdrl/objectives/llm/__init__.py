"""tdrl.objectives.llm: losses and advantage transforms for language-model RL (GRPO, DAPO, CISPO, SFT, distillation)."""

from tdrl.objectives.llm._utils import k3_kl_token_estimate
from tdrl.objectives.llm.distillation import DistillationLoss, DistillationLossOutput
from tdrl.objectives.llm.grpo import (
    DAPO,
    CISPOLoss,
    CISPOLossOutput,
    DAPOLossOutput,
    GRPOLoss,
    GRPOLossOutput,
    LLMLossOutput,
)
from tdrl.objectives.llm.mc_advantage import MCAdvantage, MCAdvantageSelector
from tdrl.objectives.llm.ray import RayMCAdvantage
from tdrl.objectives.llm.sft import SFTLoss, SFTLossOutput

__all__ = [
    "CISPOLoss",
    "CISPOLossOutput",
    "DAPO",
    "DAPOLossOutput",
    "DistillationLoss",
    "DistillationLossOutput",
    "GRPOLoss",
    "GRPOLossOutput",
    "LLMLossOutput",
    "MCAdvantage",
    "MCAdvantageSelector",
    "RayMCAdvantage",
    "SFTLoss",
    "SFTLossOutput",
    "k3_kl_token_estimate",
]
