"""The LLM output containers the envs read and write (``ChatHistory``, ``Text``, ``Tokens``).

They live in :mod:`tdrl.data.llm.containers` (TorchRL exports them from ``torchrl.modules.llm.policies``,
which re-exports them here too); this module is the single place ``tdrl.envs.llm`` takes them from.
"""

from __future__ import annotations

from tdrl.data.llm.containers import ChatHistory, Text, Tokens

__all__ = ["ChatHistory", "Text", "Tokens"]
