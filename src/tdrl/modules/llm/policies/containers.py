"""The LLM output containers (``Text``, ``Tokens``, ``Masks``, ``LogProbs``, ``ChatHistory``).

They are defined in :mod:`tdrl.data.llm.containers` (they depend only on ``tensordict`` and ``tdrl.data``,
so the LLM envs, a lower layer, can use them too) and importable from here, next to the policy wrappers, as
in TorchRL's ``torchrl.modules.llm.policies``.
"""

from tdrl.data.llm.containers import ChatHistory, LogProbs, Masks, Text, Tokens

__all__ = ["ChatHistory", "LogProbs", "Masks", "Text", "Tokens"]
