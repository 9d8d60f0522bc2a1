"""LLM environment transforms (TorchRL's ``torchrl.envs.llm.transforms``)."""

from tdrl.envs.llm.transforms.dataloading import DataLoadingPrimer, as_nested_tensor, as_padded_tensor
from tdrl.envs.llm.transforms.kl import KLComputation, KLRewardTransform, RetrieveKL, RetrieveLogProb
from tdrl.envs.llm.transforms.policy_version import PolicyVersion
from tdrl.envs.llm.transforms.reason import AddThinkingPrompt
from tdrl.envs.llm.transforms.tokenizer import IncrementalTokenizer, Tokenizer

__all__ = [
    "AddThinkingPrompt",
    "DataLoadingPrimer",
    "IncrementalTokenizer",
    "KLComputation",
    "KLRewardTransform",
    "PolicyVersion",
    "RetrieveKL",
    "RetrieveLogProb",
    "Tokenizer",
    "as_nested_tensor",
    "as_padded_tensor",
]
