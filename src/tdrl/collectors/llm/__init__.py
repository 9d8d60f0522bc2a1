"""tdrl.collectors.llm: collection of dialog turns for language-model environments."""

from tdrl.collectors.llm.base import LLMCollector
from tdrl.collectors.llm.ray_collector import RayLLMCollector

__all__ = ["LLMCollector", "RayLLMCollector"]
