"""Hash modules turning tensors into integer keys: ``BinaryToDecimal``, ``SipHash``, ``RandomProjectionHash``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

__all__ = ["BinaryToDecimal", "RandomProjectionHash", "SipHash"]


class BinaryToDecimal(nn.Module):
    """Reads groups of ``num_bits`` binary digits along the last dim as base-2 numbers, and sums the groups.

    The last dim (length ``F``) is cut into ``F // num_bits`` groups, most significant bit first; each group is
    read as an integer and the groups of one row are summed. Leading dims are flattened: the output has shape
    ``[prod(leading dims)]``.

    Args:
        num_bits: the number of digits per group; ``F`` must be a multiple of it (and not smaller).
        device: the device of the inputs and outputs.
        dtype: the dtype the inputs are cast to and weighted in (integer results are summed to ``int64``).
        convert_to_binary: if ``True``, inputs go through ``torch.heaviside(x, 0)`` first (positive -> 1,
            zero or negative -> 0). Defaults to ``False``.

    Examples:
        >>> b2d = BinaryToDecimal(num_bits=4, device="cpu", dtype=torch.int32, convert_to_binary=True)
        >>> b2d(torch.tensor([[0.0, 0, 1, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 10, 0]]))
        tensor([3, 2])
    """

    def __init__(
        self,
        num_bits: int,
        device: torch.device | str | None,
        dtype: torch.dtype,
        convert_to_binary: bool = False,
    ) -> None:
        super().__init__()
        if int(num_bits) < 1:
            raise ValueError(f"BinaryToDecimal: num_bits must be >= 1, got {num_bits}.")
        self.num_bits = int(num_bits)
        self.convert_to_binary = convert_to_binary
        self.bases = 2 ** torch.arange(self.num_bits - 1, -1, -1, device=device, dtype=dtype)
        self.zero_tensor = torch.zeros((1,), device=device)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        num_features = features.shape[-1] if features.ndim else 0
        if self.num_bits > num_features:
            raise ValueError(
                f"BinaryToDecimal: the last dim of the input ({num_features}) is smaller than num_bits={self.num_bits}."
            )
        if num_features % self.num_bits:
            raise ValueError(
                f"BinaryToDecimal: the last dim of the input ({num_features}) is not a multiple of "
                f"num_bits={self.num_bits}."
            )
        if self.convert_to_binary:
            features = torch.heaviside(features, self.zero_tensor.to(features))
        groups = features.reshape(-1, num_features // self.num_bits, self.num_bits).to(self.bases.dtype)
        return (groups * self.bases).sum(-1).sum(-1)


class SipHash(nn.Module):
    """Hashes each row of a tensor with Python's built-in ``hash`` of its raw bytes (SipHash-1-3 in CPython).

    Row ``i`` of the output is ``hash(x[i].numpy().tobytes())``: rows with equal values and dtype get equal
    hashes. ``bfloat16`` inputs are cast to ``float16`` first (numpy has no bfloat16).

    Args:
        as_tensor: if ``True`` (default) return an ``int64`` tensor of shape ``[x.shape[0]]``, else the list
            of the rows' bytes.

    .. warning:: ``hash`` of bytes is salted per interpreter: set ``PYTHONHASHSEED`` before Python starts
        to get the same values across runs.

    Examples:
        >>> a = torch.tensor([[0.1, 0.2], [0.3, 0.4], [0.1, 0.2]])
        >>> h = SipHash()(a)
        >>> h.shape, bool(h[0] == h[2]), bool(h[0] == h[1])
        (torch.Size([3]), True, False)
    """

    def __init__(self, as_tensor: bool = True) -> None:
        super().__init__()
        self.as_tensor = as_tensor

    def forward(self, x: torch.Tensor) -> torch.Tensor | list[bytes]:
        if x.ndim == 0:
            raise ValueError(f"{type(self).__name__}: expected a tensor with a batch dim, got a 0-dim tensor.")
        if x.dtype == torch.bfloat16:
            x = x.to(torch.float16)
        arr = x.detach().cpu().numpy()
        rows = [row.tobytes() for row in arr]
        if not self.as_tensor:
            return rows
        return torch.tensor([hash(row) for row in rows], dtype=torch.int64)


class RandomProjectionHash(SipHash):
    """Projects the last dim on ``n_components`` random directions, then hashes the rows with :class:`SipHash`.

    The projection matrix (a buffer ``transform`` of shape ``[in_features, n_components]`` and dtype
    ``dtype_cast``) is created at the first call (or by :meth:`fit`) and filled by ``init_method``; seed torch
    before that call to get reproducible hashes.

    Keyword Args:
        n_components: the projected dimension. Defaults to ``16``.
        dtype_cast: the dtype of the projection (inputs are cast to it). Defaults to ``torch.bfloat16``.
        as_tensor: see :class:`SipHash`.
        init_method: fills the projection in place. Defaults to ``torch.nn.init.normal_``.

    Examples:
        >>> _ = torch.manual_seed(0)
        >>> h = RandomProjectionHash(n_components=4)
        >>> x = torch.randn(3, 32)
        >>> out = h(x)
        >>> h.transform.shape, out.shape, bool((h(x) == out).all())
        (torch.Size([32, 4]), torch.Size([3]), True)
    """

    _N_COMPONENTS_DEFAULT = 16
    transform: torch.Tensor
    _n_components: torch.Tensor
    init_method: Callable[[torch.Tensor], Any]

    def __init__(
        self,
        *,
        n_components: int | None = None,
        dtype_cast: torch.dtype = torch.bfloat16,
        as_tensor: bool = True,
        init_method: Callable[[torch.Tensor], torch.Tensor | None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(as_tensor=as_tensor)
        if n_components is None:
            n_components = self._N_COMPONENTS_DEFAULT
        if int(n_components) < 1:
            raise ValueError(f"RandomProjectionHash: n_components must be >= 1, got {n_components}.")
        self.register_buffer("_n_components", torch.as_tensor(n_components))
        self._init = False
        self.init_method = torch.nn.init.normal_ if init_method is None else init_method
        self.dtype_cast = dtype_cast
        self.register_buffer("transform", nn.parameter.UninitializedBuffer())

    @property
    def n_components(self) -> int:
        """The projected dimension."""
        return int(self._n_components.item())

    def fit(self, x: torch.Tensor) -> None:
        """Creates the projection for inputs shaped like ``x`` (last dim = features) and fills it."""
        if isinstance(self.transform, nn.parameter.UninitializedBuffer):
            self.transform.materialize((x.shape[-1], self.n_components), dtype=self.dtype_cast, device=x.device)
        self.init_method(self.transform)
        self._init = True

    def forward(self, x: torch.Tensor) -> torch.Tensor | list[bytes]:
        if not self._init:
            self.fit(x)
        if x.shape[-1] != self.transform.shape[0]:
            raise ValueError(
                f"RandomProjectionHash: the projection expects {self.transform.shape[0]} features in the last "
                f"dim, got input of shape {tuple(x.shape)}."
            )
        return super().forward(x.to(self.dtype_cast) @ self.transform)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, *args: Any, **kwargs: Any) -> None:
        # A fitted projection loads into a fresh module (TorchRL's copy_ into the uninitialized buffer fails).
        saved = state_dict.get(prefix + "transform")
        if saved is not None and isinstance(self.transform, nn.parameter.UninitializedBuffer):
            self.transform.materialize(saved.shape, dtype=saved.dtype, device=saved.device)
            self._init = True
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
