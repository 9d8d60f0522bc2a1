"""``RemoteTensorDictReplayBuffer``: a TensorDictReplayBuffer meant to be owned by one process and called from
others through ``torch.distributed.rpc`` (``rref.rpc_sync().extend(td)``), as TorchRL's.

Its public methods are the ones a remote caller needs, with explicit signatures (RPC pickles the call by
name). A Ray deployment uses :class:`~tdrl.data.RayReplayBuffer` instead.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl.data.replay_buffers.tensordict_buffers import TensorDictReplayBuffer

__all__ = ["RemoteTensorDictReplayBuffer"]


class RemoteTensorDictReplayBuffer(TensorDictReplayBuffer):
    """A :class:`~tdrl.data.TensorDictReplayBuffer` for remote use (``torch.distributed.rpc``) or local use.

    Args:
        **kwargs: the arguments of :class:`~tdrl.data.TensorDictReplayBuffer`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage
        >>> rb = RemoteTensorDictReplayBuffer(storage=LazyTensorStorage(8), batch_size=2)
        >>> rb.extend(TensorDict({"x": torch.arange(4)}, [4])).tolist()
        [0, 1, 2, 3]
        >>> rb.sample().shape
        torch.Size([2])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    def sample(self, batch_size: int | None = None, return_info: bool = False) -> Any:
        return super().sample(batch_size, return_info=return_info)

    def add(self, data: TensorDictBase) -> int | torch.Tensor | None:
        return super().add(data)

    def extend(self, tensordicts: Any) -> torch.Tensor:
        return super().extend(tensordicts)

    def update_priority(self, index: int | torch.Tensor, priority: float | torch.Tensor) -> None:
        super().update_priority(index, priority)

    def update_tensordict_priority(self, data: TensorDictBase) -> None:
        super().update_tensordict_priority(data)
