"""Maps from tensordict entries to stored tensordicts, and Monte-Carlo search trees over them (``torchrl.data.map``)."""

from tdrl.data.map.hash import BinaryToDecimal, RandomProjectionHash, SipHash
from tdrl.data.map.query import HashToInt, QueryModule
from tdrl.data.map.tdstorage import TensorDictMap, TensorMap
from tdrl.data.map.tree import MCTSForest, Tree

__all__ = [
    "BinaryToDecimal",
    "HashToInt",
    "MCTSForest",
    "QueryModule",
    "RandomProjectionHash",
    "SipHash",
    "TensorDictMap",
    "TensorMap",
    "Tree",
]
