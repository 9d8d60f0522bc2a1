"""A list storage that keeps every tensor leaf compressed (zlib by default)."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data.replay_buffers.storages.list import ListStorage
from tdrl.data.replay_buffers.utils import build_tensordict, fast_unbind, leaf_paths, stack_items

__all__ = ["CompressedListStorage", "tensor_to_bytes"]


def tensor_to_bytes(tensor: torch.Tensor) -> bytes:
    """Raw bytes of a tensor, by the fastest path measured (``numpy().tobytes()``).

    Dtypes NumPy lacks (bfloat16, ...) are reinterpreted as bytes first.

    Examples:
        >>> tensor_to_bytes(torch.tensor([1, 2], dtype=torch.uint8))
        b'\\x01\\x02'
    """
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if not t.is_contiguous():
        t = t.contiguous()
    try:
        return t.numpy().tobytes()
    except TypeError:  # dtype without a NumPy equivalent
        return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def _dtype_from_str(name: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"Unknown dtype {name!r} in compressed metadata.")
    return dtype


@dataclass
class _Packed:
    """One compressed item: compressed leaves plus what is needed to rebuild it."""

    leaves: list[torch.Tensor]
    meta: list[dict[str, Any]]
    paths: list[tuple[str, ...]] | None  # None: the item is a single tensor
    batch_size: list[int] | None


class CompressedListStorage(ListStorage):
    """A :class:`ListStorage` that compresses each tensor leaf of each item.

    Useful for pixel observations, which compress well. Reads decompress the requested items; the
    buffer's default collate stacks them.

    Args:
        max_size: capacity, in items.

    Keyword Args:
        compression_fn: ``tensor -> uint8 tensor``; defaults to zlib over the tensor's raw bytes.
        decompression_fn: ``(uint8 tensor, metadata dict) -> tensor`` with metadata keys ``shape``,
            ``dtype`` and ``device``; defaults to the inverse of the default compression.
        compression_level: zlib level (0-9) of the default compression. Defaults to ``3``.
        device: where decompressed tensors are placed. Defaults to ``"cpu"``.
        compilable: see :class:`Storage`.

    Examples:
        >>> storage = CompressedListStorage(10)
        >>> frames = TensorDict(pixels=torch.zeros(2, 4, 84, 84, dtype=torch.uint8), batch_size=[2])
        >>> storage.set(range(2), frames)
        >>> storage._storage[0].leaves[0].numel() < 84 * 84, storage.get(1)["pixels"].shape
        (True, torch.Size([4, 84, 84]))
    """

    def __init__(
        self,
        max_size: int,
        *,
        compression_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
        decompression_fn: Callable[[torch.Tensor, dict], torch.Tensor] | None = None,
        compression_level: int = 3,
        device: torch.device | str = "cpu",
        compilable: bool = False,
    ) -> None:
        super().__init__(max_size, compilable=compilable, device=device)
        self.compression_level = int(compression_level)
        self.compression_fn = compression_fn if compression_fn is not None else self._default_compression_fn
        self.decompression_fn = decompression_fn if decompression_fn is not None else self._default_decompression_fn

    def _default_compression_fn(self, tensor: torch.Tensor) -> torch.Tensor:
        packed = zlib.compress(tensor_to_bytes(tensor), self.compression_level)
        return torch.frombuffer(bytearray(packed), dtype=torch.uint8)

    def _default_decompression_fn(self, compressed: torch.Tensor, metadata: dict) -> torch.Tensor:
        raw = zlib.decompress(tensor_to_bytes(compressed))
        dtype = metadata["dtype"]
        out = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
        return out.view(dtype).reshape(metadata["shape"])

    def _split_batch(self, data: Any) -> Any:
        # Each item is compressed on its own, so it must be materialized.
        if isinstance(data, TensorDictBase):
            return fast_unbind(data)
        if isinstance(data, torch.Tensor):
            return data.unbind(0)
        return data

    def get_stacked(self, index: Any) -> Any:
        return stack_items(self.get(index))

    def _to_device(self, item: Any) -> Any:
        # Compression happens on the host; the device applies to decompressed outputs.
        return item

    def _compress_leaf(self, t: torch.Tensor) -> tuple[torch.Tensor, dict[str, Any]]:
        meta = {"shape": tuple(t.shape), "dtype": t.dtype, "device": t.device}
        return self.compression_fn(t), meta

    def _encode(self, item: Any) -> _Packed:
        if isinstance(item, torch.Tensor):
            leaf, meta = self._compress_leaf(item)
            return _Packed([leaf], [meta], None, None)
        if isinstance(item, TensorDictBase):
            paths = leaf_paths(item) if type(item) is TensorDict else None
            if paths is None:
                paths = sorted((k,) if isinstance(k, str) else tuple(k) for k in item.keys(True, True))
            pairs = [self._compress_leaf(item.get(p)) for p in paths]
            return _Packed([p[0] for p in pairs], [p[1] for p in pairs], paths, list(item.batch_size))
        raise TypeError(f"CompressedListStorage stores tensors or TensorDicts, got {type(item).__name__}.")

    def _decode(self, packed: _Packed) -> Any:
        device = self.device if self.device is not None else torch.device("cpu")
        leaves = [self.decompression_fn(c, m).to(device) for c, m in zip(packed.leaves, packed.meta)]
        if packed.paths is None:
            return leaves[0]
        return build_tensordict(packed.paths, leaves, torch.Size(packed.batch_size or ()))

    def state_dict(self) -> dict[str, Any]:
        items = []
        for p in self._storage:
            meta = [{"shape": list(m["shape"]), "dtype": str(m["dtype"])} for m in p.meta]
            paths = None if p.paths is None else [list(x) for x in p.paths]
            items.append({"leaves": p.leaves, "meta": meta, "paths": paths, "batch_size": p.batch_size})
        return {"_storage": items, "compression_level": self.compression_level}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        items = []
        for it in state_dict["_storage"]:
            meta = [
                {"shape": tuple(m["shape"]), "dtype": _dtype_from_str(m["dtype"]), "device": torch.device("cpu")}
                for m in it["meta"]
            ]
            paths = None if it["paths"] is None else [tuple(x) for x in it["paths"]]
            items.append(_Packed(list(it["leaves"]), meta, paths, it["batch_size"]))
        self._storage = items
        self._keys = None

    def bytes(self) -> int:
        """Total size of the compressed data, in bytes."""
        return sum(leaf.numel() for p in self._storage for leaf in p.leaves)
