"""LLM policies for tdrl (TorchRL's ``torchrl.modules.llm``): wrappers and output containers.

Importing this package does not import ``transformers`` or ``vllm``; the wrappers import them when built.
"""

from tdrl.modules.llm.policies import (
    ChatHistory,
    LLMWrapperBase,
    LogProbs,
    Masks,
    Text,
    Tokens,
    TransformersWrapper,
    vLLMWrapper,
)

__all__ = [
    "ChatHistory",
    "LLMWrapperBase",
    "LogProbs",
    "Masks",
    "Text",
    "Tokens",
    "TransformersWrapper",
    "vLLMWrapper",
]
