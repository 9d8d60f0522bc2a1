"""Image transforms: ``ToTensorImage`` (HWC uint8 -> CHW float), ``Resize`` and ``GrayScale``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Bounded, Unbounded
from tdrl.envs.transforms._base import Transform

__all__ = ["GrayScale", "Resize", "ToTensorImage"]

_IMAGE_KEYS = ["pixels"]


def _rebuild(
    leaf: Any,
    shape: Sequence[int],
    low: float | None = None,
    high: float | None = None,
    dtype: torch.dtype | None = None,
) -> Any:
    dtype = leaf.dtype if dtype is None else dtype
    if low is not None or isinstance(leaf, Bounded):
        lo = low if low is not None else leaf.low.min().item()
        hi = high if high is not None else leaf.high.max().item()
        return Bounded(low=lo, high=hi, shape=shape, dtype=dtype, device=leaf.device)
    return Unbounded(shape=shape, dtype=dtype, device=leaf.device)


class _ImageTransform(Transform):
    def _out_spec(self, leaf: Any) -> Any:
        return leaf

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in observation_spec.keys(True, True):
                observation_spec[out_key] = self._out_spec(observation_spec[in_key])
        return observation_spec


class ToTensorImage(_ImageTransform):
    """Turns ``(..., H, W, C)`` images into ``(..., C, H, W)`` floats (scaled to [0, 1] from integers).

    Args:
        from_int: divide by 255 (default: when the input is an integer tensor).
        unsqueeze: add a leading dim to 3-d images.
        dtype: the output dtype (default: ``torch.get_default_dtype()``).

    Keyword Args:
        in_keys: the entries (default ``["pixels"]``).
        out_keys: the outputs (default ``in_keys``).
        shape_tolerant: leave images already in CHW layout (C in {1, 3}) unpermuted.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"pixels": torch.full((4, 5, 3), 255, dtype=torch.uint8)}, [])
        >>> out = ToTensorImage()(td)["pixels"]
        >>> out.shape, out.max()
        (torch.Size([3, 4, 5]), tensor(1.))
    """

    def __init__(
        self,
        from_int: bool | None = None,
        unsqueeze: bool = False,
        dtype: torch.dtype | None = None,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        shape_tolerant: bool = False,
    ) -> None:
        super().__init__(in_keys=_IMAGE_KEYS if in_keys is None else in_keys, out_keys=out_keys)
        self.from_int = from_int
        self.unsqueeze = unsqueeze
        self.dtype = torch.get_default_dtype() if dtype is None else dtype
        self.shape_tolerant = shape_tolerant

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.ndim < 3:
            raise ValueError(f"ToTensorImage expects (..., H, W, C) images, got shape {tuple(obs.shape)}")
        if not (self.shape_tolerant and obs.shape[-3] in (1, 3) and obs.shape[-1] not in (1, 3)):
            obs = obs.permute(*range(obs.ndim - 3), -1, -3, -2)
        from_int = (not obs.is_floating_point()) if self.from_int is None else self.from_int
        obs = obs.to(self.dtype)
        if from_int:
            obs = obs.div(255)
        if self.unsqueeze and obs.ndim == 3:
            obs = obs.unsqueeze(0)
        return obs

    def _out_spec(self, leaf: Any) -> Any:
        shape = list(leaf.shape)
        if not (self.shape_tolerant and shape[-3] in (1, 3) and shape[-1] not in (1, 3)):
            shape = [*shape[:-3], shape[-1], shape[-3], shape[-2]]
        if self.unsqueeze and len(shape) == 3:
            shape = [1, *shape]
        from_int = (leaf.dtype.is_floating_point is False) if self.from_int is None else self.from_int
        if from_int:
            return Bounded(low=0.0, high=1.0, shape=shape, dtype=self.dtype, device=leaf.device)
        return _rebuild(leaf, shape, dtype=self.dtype)

    def __repr__(self) -> str:
        return f"ToTensorImage(keys={self.in_keys}, dtype={self.dtype})"


class Resize(_ImageTransform):
    """Resizes ``(..., C, H, W)`` images to ``(h, w)``.

    Args:
        w: the output width.
        h: the output height (default ``w``).
        interpolation: an ``F.interpolate`` mode (``"bilinear"``, ``"nearest"``, ``"bicubic"``, ...).
        in_keys: the entries (default ``["pixels"]``).
        out_keys: the outputs (default ``in_keys``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> Resize(8, 6)(TensorDict({"pixels": torch.zeros(2, 3, 16, 16)}, [2]))["pixels"].shape
        torch.Size([2, 3, 6, 8])
    """

    def __init__(
        self,
        w: int,
        h: int | None = None,
        interpolation: str = "bilinear",
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=_IMAGE_KEYS if in_keys is None else in_keys, out_keys=out_keys)
        self.w = int(w)
        self.h = int(w if h is None else h)
        self.interpolation = interpolation

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.ndim < 3:
            raise ValueError(f"Resize expects (..., C, H, W) images, got shape {tuple(obs.shape)}")
        lead = obs.shape[:-3]
        flat = obs.reshape(-1, *obs.shape[-3:])
        dtype = flat.dtype
        if not flat.is_floating_point():
            flat = flat.float()
        kwargs = {"align_corners": False} if self.interpolation in ("bilinear", "bicubic") else {}
        out = F.interpolate(flat, size=(self.h, self.w), mode=self.interpolation, **kwargs)
        if not dtype.is_floating_point:
            out = out.round().clamp(torch.iinfo(dtype).min, torch.iinfo(dtype).max)
        return out.to(dtype).reshape(*lead, *out.shape[-3:])

    def _out_spec(self, leaf: Any) -> Any:
        return _rebuild(leaf, [*leaf.shape[:-2], self.h, self.w])

    def __repr__(self) -> str:
        return f"Resize(w={self.w}, h={self.h}, interpolation={self.interpolation!r}, keys={self.in_keys})"


class GrayScale(_ImageTransform):
    """Turns ``(..., 3, H, W)`` RGB images into ``(..., 1, H, W)`` luminance (ITU-R 601 weights).

    Args:
        in_keys: the entries (default ``["pixels"]``).
        out_keys: the outputs (default ``in_keys``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> GrayScale()(TensorDict({"pixels": torch.ones(3, 4, 4)}, []))["pixels"].shape
        torch.Size([1, 4, 4])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=_IMAGE_KEYS if in_keys is None else in_keys, out_keys=out_keys)

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.ndim < 3 or obs.shape[-3] != 3:
            raise ValueError(f"GrayScale expects (..., 3, H, W) images, got shape {tuple(obs.shape)}")
        weights = torch.tensor([0.2989, 0.587, 0.114], dtype=torch.float32, device=obs.device)
        gray = (obs.float() * weights.view(3, 1, 1)).sum(-3, keepdim=True)
        return gray.to(obs.dtype) if obs.is_floating_point() else gray.round().to(obs.dtype)

    def _out_spec(self, leaf: Any) -> Any:
        return _rebuild(leaf, [*leaf.shape[:-3], 1, *leaf.shape[-2:]])

    def __repr__(self) -> str:
        return f"GrayScale(keys={self.in_keys})"
