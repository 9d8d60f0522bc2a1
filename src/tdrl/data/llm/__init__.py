"""LLM data: conversations (``History``), chat templates, KL coefficient controllers and buffer helpers."""

from tdrl.data.llm._templates import add_chat_template
from tdrl.data.llm.dataset import TensorDictTokenizer, TokenizedDatasetLoader, get_dataloader
from tdrl.data.llm.history import ContentBase, History
from tdrl.data.llm.iterators import create_infinite_iterator
from tdrl.data.llm.prompt import PromptData, PromptTensorDictTokenizer
from tdrl.data.llm.reward import PairwiseDataset, RewardData
from tdrl.data.llm.topk import TopKRewardSelector
from tdrl.data.llm.utils import AdaptiveKLController, ConstantKLController

__all__ = [
    "AdaptiveKLController",
    "ConstantKLController",
    "ContentBase",
    "History",
    "PairwiseDataset",
    "PromptData",
    "PromptTensorDictTokenizer",
    "RewardData",
    "TensorDictTokenizer",
    "TokenizedDatasetLoader",
    "TopKRewardSelector",
    "add_chat_template",
    "create_infinite_iterator",
    "get_dataloader",
]
