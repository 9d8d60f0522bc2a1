"""The LLM output containers the envs read and write (``ChatHistory``, ``Text``, ``Tokens``).

They are defined with the policy wrappers in ``tdrl.modules.llm.policies.containers`` (TorchRL keeps them
in ``torchrl.modules.llm.policies``) and depend only on ``tensordict`` and ``tdrl.data``. This module is
the single place ``tdrl.envs.llm`` takes them from.
"""

from __future__ import annotations

from tdrl.modules.llm.policies.containers import ChatHistory, Text, Tokens

__all__ = ["ChatHistory", "Text", "Tokens"]
