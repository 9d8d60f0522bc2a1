"""LLM policy wrappers and their output containers (TorchRL's ``torchrl.modules.llm.policies``).

``transformers`` and ``vllm`` are imported only when a wrapper is built, never by importing this package.
"""

from tdrl.modules.llm.policies.common import (
    ChatHistory,
    LLMWrapperBase,
    LogProbDistribution,
    LogProbs,
    Masks,
    Text,
    Tokens,
)
from tdrl.modules.llm.policies.transformers_wrapper import TransformersWrapper
from tdrl.modules.llm.policies.vllm_wrapper import vLLMWrapper

__all__ = [
    "ChatHistory",
    "LLMWrapperBase",
    "LogProbDistribution",
    "LogProbs",
    "Masks",
    "Text",
    "Tokens",
    "TransformersWrapper",
    "vLLMWrapper",
]
