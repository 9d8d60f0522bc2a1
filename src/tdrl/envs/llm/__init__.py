"""LLM environments (TorchRL's ``torchrl.envs.llm``): chat envs, dataset-fed tasks and their transforms."""

from tdrl.envs.custom.llm import LLMHashingEnv
from tdrl.envs.llm.chat import ChatEnv, DatasetChatEnv
from tdrl.envs.llm.datasets import CountdownEnv, GSM8KEnv, GSM8KPrepareQuestion, MATHEnv, make_gsm8k_env
from tdrl.envs.llm.envs import LLMEnv
from tdrl.envs.llm.reward import CountdownRewardParser, GSM8KRewardParser, MATHRewardParser
from tdrl.envs.llm.transforms import (
    AddThinkingPrompt,
    DataLoadingPrimer,
    IncrementalTokenizer,
    KLComputation,
    KLRewardTransform,
    RetrieveKL,
    RetrieveLogProb,
    Tokenizer,
    as_nested_tensor,
    as_padded_tensor,
)

__all__ = [
    "AddThinkingPrompt",
    "ChatEnv",
    "CountdownEnv",
    "CountdownRewardParser",
    "GSM8KEnv",
    "GSM8KPrepareQuestion",
    "GSM8KRewardParser",
    "DataLoadingPrimer",
    "DatasetChatEnv",
    "IncrementalTokenizer",
    "KLComputation",
    "KLRewardTransform",
    "LLMEnv",
    "LLMHashingEnv",
    "MATHEnv",
    "MATHRewardParser",
    "RetrieveKL",
    "RetrieveLogProb",
    "Tokenizer",
    "as_nested_tensor",
    "as_padded_tensor",
    "make_gsm8k_env",
]
