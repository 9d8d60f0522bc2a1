"""tdrl.collectors.llm: collection of dialog turns for language-model environments."""

from tdrl.collectors.llm.base import LLMCollector

__all__ = ["LLMCollector"]
