"""Reward transforms of the LLM tasks (TorchRL's ``torchrl.envs.llm.reward``)."""

from tdrl.envs.llm.reward._base import AnswerRewardParser
from tdrl.envs.llm.reward.countdown import CountdownRewardParser
from tdrl.envs.llm.reward.gsm8k import GSM8KRewardParser
from tdrl.envs.llm.reward.math import MATHRewardParser

__all__ = ["AnswerRewardParser", "CountdownRewardParser", "GSM8KRewardParser", "MATHRewardParser"]
