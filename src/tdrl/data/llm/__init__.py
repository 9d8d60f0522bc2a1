"""LLM data: conversations (``History``), chat templates and KL coefficient controllers."""

from tdrl.data.llm._templates import add_chat_template
from tdrl.data.llm.history import ContentBase, History
from tdrl.data.llm.utils import AdaptiveKLController, ConstantKLController

__all__ = ["AdaptiveKLController", "ConstantKLController", "ContentBase", "History", "add_chat_template"]
