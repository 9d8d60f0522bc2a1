"""Pass-through transforms: ``FiniteTensorDictCheck`` (raises on NaN/inf) and ``PinMemoryTransform``."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from tdrl.envs.transforms._base import Transform

__all__ = ["FiniteTensorDictCheck", "PinMemoryTransform"]


class FiniteTensorDictCheck(Transform):
    """Raises a ``ValueError`` naming the entry when a step or reset output holds a NaN or an infinity.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = FiniteTensorDictCheck()
        >>> _ = t(TensorDict(x=torch.zeros(2)))
        >>> try:
        ...     t(TensorDict(x=torch.tensor([0.0, float("nan")])))
        ... except ValueError as err:
        ...     print(err)
        FiniteTensorDictCheck: entry 'x' holds non-finite values
    """

    def __init__(self) -> None:
        super().__init__(in_keys=[])

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key, value in next_tensordict.items(True, True):
            if isinstance(value, torch.Tensor) and not bool(torch.isfinite(value).all()):
                raise ValueError(f"FiniteTensorDictCheck: entry {key!r} holds non-finite values")
        return next_tensordict


class PinMemoryTransform(Transform):
    """Moves each step/reset output to pinned memory (faster host-to-GPU copies); a no-op without an accelerator.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> PinMemoryTransform()(TensorDict(x=torch.zeros(2)))["x"].tolist()
        [0.0, 0.0]
    """

    def __init__(self) -> None:
        super().__init__()

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if not torch.cuda.is_available():
            # Pinning needs an accelerator runtime; TorchRL raises here, a CPU-only run should just go on.
            return next_tensordict
        return next_tensordict.pin_memory()
