"""``NonTensor``: a spec for non-tensor data (strings, objects) carried in a TensorDict."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack

from tdrl.data.tensor_specs._base import DEVICE_TYPING, SHAPE_TYPING, TensorSpec, _as_dtype


class NonTensor(TensorSpec):
    """Non-tensor data (text, python objects) stored in a TensorDict as ``NonTensorData``.

    ``rand()``/``zero()`` return ``NonTensorData`` holding ``example_data`` (``None`` by default) with the
    spec's shape as batch size. Any python value is in the spec; ``NonTensorData``/``NonTensorStack``
    values must also have a batch size ending with the spec's shape.

    Args:
        shape: full shape, leading batch dims included. Defaults to ``(1,)``.
        device: device recorded on the produced ``NonTensorData``. Defaults to ``None``.
        dtype: optional dtype (kept for TorchRL compatibility).
        example_data: the value ``rand``/``zero``/``one`` return.
        batched: kept for TorchRL compatibility.
        feature_dims: kept for TorchRL compatibility.

    Examples:
        >>> spec = NonTensor(shape=(), example_data="hello")
        >>> spec.zero().data
        'hello'
        >>> spec.is_in(spec.rand())
        True
    """

    def __init__(
        self,
        shape: SHAPE_TYPING = (1,),
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = None,
        example_data: Any = None,
        batched: bool | None = None,
        feature_dims: int | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"NonTensor got unexpected keyword arguments {sorted(kwargs)}.")
        dtype = _as_dtype(dtype, torch.float32) if dtype is not None else None
        super().__init__(shape, None, device, dtype, None)  # type: ignore[arg-type]
        self.example_data = example_data
        self.batched = batched
        self.feature_dims = feature_dims

    def _data(self, shape: SHAPE_TYPING) -> NonTensorData:
        return NonTensorData(data=self.example_data, batch_size=self._full_shape(shape), device=self.device)

    def rand(self, shape: SHAPE_TYPING = None) -> NonTensorData:  # type: ignore[override]  # NonTensorData, as TorchRL's NonTensor
        """``NonTensorData`` holding ``example_data``."""
        return self._data(shape)

    def zero(self, shape: SHAPE_TYPING = None) -> NonTensorData:  # type: ignore[override]  # NonTensorData, as TorchRL's NonTensor
        """``NonTensorData`` holding ``example_data``."""
        return self._data(shape)

    def one(self, shape: SHAPE_TYPING = None) -> NonTensorData:  # type: ignore[override]  # NonTensorData, as TorchRL's NonTensor
        """``NonTensorData`` holding ``example_data``."""
        return self._data(shape)

    def is_in(self, val: Any) -> bool:
        """Any python value is in; a ``NonTensorData``/``NonTensorStack`` must also match the shape."""
        if isinstance(val, (NonTensorData, NonTensorStack)):
            return self._shape_matches(val.batch_size)
        return True

    def _mismatch(self, val: Any) -> str | None:
        if self.is_in(val):
            return None
        return f"expected batch size ending with {tuple(self.shape)}, got {tuple(val.batch_size)}"

    def type_check(self, value: Any, key: Any = None) -> None:
        """Non-tensor data has no dtype to check."""

    def project(self, val: Any) -> Any:
        """Non-tensor values are returned unchanged."""
        return val

    def encode(self, val: Any, *, ignore_device: bool = False) -> NonTensorData:  # type: ignore[override]  # NonTensorData, as TorchRL's NonTensor
        """Wraps ``val`` in ``NonTensorData`` with the spec's shape as batch size."""
        if isinstance(val, (NonTensorData, NonTensorStack)):
            return val
        return NonTensorData(data=val, batch_size=self.shape, device=None if ignore_device else self.device)

    def to_numpy(self, val: Any, safe: bool | None = None) -> Any:
        """The wrapped python data (``NonTensorData.data``), or ``val`` itself."""
        if safe:
            self.assert_is_in(val)
        if isinstance(val, NonTensorData):
            return val.data
        if isinstance(val, NonTensorStack):
            return np.array(val.tolist(), dtype=object)
        return val

    def _state(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "device": self.device,
            "dtype": self.dtype,
            "example_data": self.example_data,
            "batched": self.batched,
            "feature_dims": self.feature_dims,
        }
