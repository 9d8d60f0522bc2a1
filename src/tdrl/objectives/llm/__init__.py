"""tdrl.objectives.llm: losses and advantage transforms for language-model RL (GRPO, DAPO, CISPO, SFT)."""

from tdrl.objectives.llm._utils import k3_kl_token_estimate
from tdrl.objectives.llm.grpo import (
    DAPO,
    CISPOLoss,
    CISPOLossOutput,
    DAPOLossOutput,
    GRPOLoss,
    GRPOLossOutput,
    LLMLossOutput,
)

__all__ = [
    "CISPOLoss",
    "CISPOLossOutput",
    "DAPO",
    "DAPOLossOutput",
    "GRPOLoss",
    "GRPOLossOutput",
    "LLMLossOutput",
    "k3_kl_token_estimate",
]
