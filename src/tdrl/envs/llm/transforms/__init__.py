"""LLM environment transforms (TorchRL's ``torchrl.envs.llm.transforms``)."""

from tdrl.envs.llm.transforms.dataloading import DataLoadingPrimer, as_nested_tensor, as_padded_tensor
from tdrl.envs.llm.transforms.tokenizer import IncrementalTokenizer, Tokenizer

__all__ = [
    "DataLoadingPrimer",
    "IncrementalTokenizer",
    "Tokenizer",
    "as_nested_tensor",
    "as_padded_tensor",
]
