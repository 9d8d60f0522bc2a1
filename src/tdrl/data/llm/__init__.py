"""LLM data: conversations (``History``), chat templates, KL coefficient controllers and buffer helpers."""

from tdrl.data.llm._templates import add_chat_template
from tdrl.data.llm.history import ContentBase, History
from tdrl.data.llm.iterators import create_infinite_iterator
from tdrl.data.llm.topk import TopKRewardSelector
from tdrl.data.llm.utils import AdaptiveKLController, ConstantKLController

__all__ = [
    "AdaptiveKLController",
    "ConstantKLController",
    "ContentBase",
    "History",
    "TopKRewardSelector",
    "add_chat_template",
    "create_infinite_iterator",
]
