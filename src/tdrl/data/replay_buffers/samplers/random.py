"""Uniform sampling with replacement."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tdrl.data.replay_buffers.samplers.base import EMPTY_STORAGE_ERROR, Sampler

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["RandomSampler"]


class RandomSampler(Sampler):
    """Draws storage indices uniformly at random, with replacement.

    Keyword Args:
        replacement (bool, optional): ``False`` builds the registered without-replacement sampler
            (``SamplerWithoutReplacement``) instead, forwarding the other keyword arguments.
            Defaults to ``True``.

    Examples:
        >>> import torch
        >>> from tdrl.data import LazyTensorStorage
        >>> storage = LazyTensorStorage(10)
        >>> storage.set(torch.arange(4), torch.arange(4) * 10)
        >>> index, info = RandomSampler().sample(storage, 8)
        >>> index.shape, bool((index < 4).all()), info
        (torch.Size([8]), True, {})
    """

    def sample(self, storage: Storage, batch_size: int) -> tuple[Any, dict]:
        if len(storage) == 0:
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        return storage._rand_given_ndim(batch_size), {}

    def _empty(self) -> None:
        return

    def dumps(self, path: Any) -> None:
        # Stateless: nothing to write.
        return

    def loads(self, path: Any) -> None:
        return

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        return
