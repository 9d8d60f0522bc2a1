"""Weight updaters of the LLM collectors (TorchRL's ``torchrl.collectors.llm.weight_update``)."""

from tdrl.collectors.llm.weight_update.vllm import vLLMUpdater

__all__ = ["vLLMUpdater"]
