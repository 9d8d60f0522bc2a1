"""Task environments built on ``DatasetChatEnv`` (TorchRL's ``torchrl.envs.llm.datasets``)."""

from tdrl.envs.llm.datasets.countdown import CountdownEnv
from tdrl.envs.llm.datasets.gsm8k import GSM8KEnv, GSM8KPrepareQuestion, make_gsm8k_env
from tdrl.envs.llm.datasets.math import MATHEnv

__all__ = ["CountdownEnv", "GSM8KEnv", "GSM8KPrepareQuestion", "MATHEnv", "make_gsm8k_env"]
