"""TorchRL's ``torchrl.envs.llm.transforms.tokenizer`` path: the tokenizer transforms."""

from tdrl.envs.transforms.llm import IncrementalTokenizer, Tokenizer

__all__ = ["IncrementalTokenizer", "Tokenizer"]
